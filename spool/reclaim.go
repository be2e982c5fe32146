package spool

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Early reclaim. Finished tickets keep their body for Retention so a
// manager can reprint them; under a quota or the cap that would refuse a
// new ticket while the spool is full of old, printed ones, and a busy store
// printing logos through the raw port fills its share in days, not the
// week of retention. A new ticket matters more than reprinting an old one:
// the oldest finished tasks lose their body early instead, exactly as
// retention would drop it later, and keep their task_no for dedupe.
const (
	// reclaimChunk bounds the bodies one commit drops, so intake is
	// never held up long.
	reclaimChunk = 256
	// reclaimScan bounds the finished tasks one commit looks at for an
	// origin's, when most of the oldest are another origin's.
	reclaimScan = 4 * reclaimChunk
	// reclaimHighWater (in 1/100 of the soft cap) is the live size at
	// which commits start dropping the oldest finished bodies, so the cap
	// itself is seldom reached while printed tickets could make room. It
	// is above the page's "spool nearly full" mark (agent
	// SpoolNearlyFullPercent, 80), so a manager hears of a filling spool
	// before printed tickets start to go.
	reclaimHighWater = 90
)

// reclaimGrace is how long a ticket that ended without printing (TIMED_OUT,
// FAILED) keeps its body whatever room is needed: the manager's Retry or
// reprint of it is the only copy of an order that never came out, and it
// matters more than a new ticket of a door that fills the spool. A door
// over its quota is refused meanwhile (limits stop abuse).
const reclaimGrace = 24 * time.Hour

// reclaim drops the bodies of finished tasks, of origin o (of any origin
// when o is ""), until their charges (Charge) freed reach need or the chunk
// is spent: printed (and canceled) tickets first, oldest first, and of
// those, for the cap (o ""), the door that holds most of the spool loses
// its own first; tickets that ended without printing only once
// reclaimGrace has passed. It returns what was freed and how many tasks
// lost their body; each keeps its task_no for dedupe and is marked
// Reclaimed, so a reprint is refused for the true reason.
func (s *Spool) reclaim(tx *bolt.Tx, o Origin, need int64) (freed int64, n int, err error) {
	first := o
	if first == "" {
		first = s.biggestOrigin(tx)
	}
	// Done keys are readings of the retention clock, never the wall clock,
	// so a clock step does not age an unprinted ticket past its grace.
	graceCut := s.retentionNow().Add(-min(reclaimGrace, s.opts.Retention))
	passes := []struct {
		origin  Origin
		printed bool
	}{{first, true}, {o, true}, {first, false}, {o, false}}
	for _, p := range passes {
		if freed >= need || n >= reclaimChunk {
			break
		}
		f, m, err := s.reclaimPass(tx, p.origin, p.printed, graceCut, need-freed, reclaimChunk-n)
		freed, n = freed+f, n+m
		if err != nil {
			return freed, n, err
		}
	}
	s.reclaimed.Add(int64(n))
	return freed, n, nil
}

// reclaimPass is one pass of reclaim over the oldest finished tasks: of
// origin o (any when ""), printed or canceled ones when printed is set,
// else those that ended without printing before graceCut.
func (s *Spool) reclaimPass(tx *bolt.Tx, o Origin, printed bool, graceCut time.Time, need int64, most int) (freed int64, n int, err error) {
	tasks := tx.Bucket(bucketTasks)
	var keys [][]byte
	c := tx.Bucket(bucketDone).Cursor()
	var scanned int
	var want int64
	for k, _ := c.First(); k != nil && want < need && len(keys) < most && scanned < reclaimScan; k, _ = c.Next() {
		scanned++
		if !printed && !timeKeyTime(k).Before(graceCut) {
			break
		}
		raw := tasks.Get(k[8:])
		if raw == nil {
			continue
		}
		t, err := decodeTask(raw)
		if err != nil {
			// Salvage's business, not this commit's: a task that does not
			// decode is left alone, so pruneDone below never fails on one
			// halfway through the transaction.
			continue
		}
		done := t.State == StatePrinted || t.State == StateCanceled
		if t.Pruned || !t.State.Terminal() || done != printed || (o != "" && t.Origin != o) {
			continue
		}
		keys = append(keys, append([]byte(nil), k...))
		want += Charge(t.Size)
	}
	for _, k := range keys {
		t, err := pruneDone(tx, k)
		if err != nil {
			return freed, n, err
		}
		if t != nil {
			if err := markReclaimed(tx, t.TaskNo); err != nil {
				return freed, n, err
			}
			freed += Charge(t.Size)
			n++
		}
	}
	return freed, n, nil
}

// markReclaimed marks the tombstone of taskNo as reclaimed early.
func markReclaimed(tx *bolt.Tx, taskNo string) error {
	raw := tx.Bucket(bucketTasks).Get([]byte(taskNo))
	if raw == nil {
		return nil
	}
	t, err := decodeTask(raw)
	if err != nil {
		return err
	}
	t.Reclaimed = true
	return putTask(tx, t)
}

// biggestOrigin is the origin whose tasks hold most of the spool (Charge).
func (s *Spool) biggestOrigin(tx *bolt.Tx) Origin {
	meta := tx.Bucket(bucketMeta)
	var best Origin
	var most int64 = -1
	for _, o := range Origins() {
		if v := int64(getU64(meta, originKey(o))); v > most {
			best, most = o, v
		}
	}
	return best
}

// nearSoftCap reports whether live data has reached reclaimHighWater of
// the intake limit (limits), and how far past that it is.
func (s *Spool) nearSoftCap(tx *bolt.Tx) (bool, int64) {
	if !s.lim.capped {
		return false, 0
	}
	st := tx.DB().Stats()
	live := tx.Size() - int64(st.FreeAlloc)
	mark := s.lim.intake * reclaimHighWater / 100
	return live >= mark, live - mark
}

// Reclaimed is how many finished tasks lost their body before their
// retention ran out because a quota or the cap needed the room, since the
// spool was opened.
func (s *Spool) Reclaimed() int64 { return s.reclaimed.Load() }

// MakeRoom drops, oldest finished first, the bodies of origin o's terminal
// tasks until a task charged need fits its quota, for a door that must
// know before it reads a job that the job will be taken (the raw port: a
// job read and then refused is a ticket the POS believes printed). It
// returns how many tasks lost their body; 0 with no error when o has no
// quota, already has room, or has no finished tasks to give.
func (s *Spool) MakeRoom(o Origin, need int64) (int, error) {
	q := s.opts.Quotas[o]
	if q <= 0 {
		return 0, nil
	}
	var n int
	op := &op{prepare: func(*bolt.Tx) error { n = 0; return nil }}
	op.apply = func(tx *bolt.Tx) error {
		used := int64(getU64(tx.Bucket(bucketMeta), originKey(o)))
		if used+need <= q {
			return nil
		}
		var err error
		_, n, err = s.reclaim(tx, o, used+need-q)
		return err
	}
	if err := s.submit(op); err != nil {
		return 0, fmt.Errorf("make room in spool %s: %w", s.path, err)
	}
	return n, nil
}

// MakeFileRoom is MakeRoom for the file, for a door that asks before it
// reads (Room) and was told no while under its quota: another door's
// printed tickets, kept for reprints, may fill the file below the point
// where commits reclaim on their own (reclaimHighWater), and a door that
// waits for room nobody makes waits for good. It drops, oldest printed
// first and the door holding most of the spool first (as the cap's
// reclaim does), finished bodies until the live data leaves room under
// the intake limit for a task charged need and one largest task more, and
// asks for the compaction that turns the freed pages into that room
// (CompactWanted). It returns how many tasks lost their body.
func (s *Spool) MakeFileRoom(need int64) (int, error) {
	if !s.lim.capped {
		return 0, nil
	}
	want := need + Charge(s.opts.MaxTaskBytes) + 8*pageBytes
	short := func(tx *bolt.Tx) int64 {
		live := tx.Size() - int64(tx.DB().Stats().FreeAlloc)
		return live + want - s.lim.intake
	}
	defer s.wantCompactFor(want)
	// A door waiting for room asks twice a second: only a write that may
	// drop something costs a commit. An empty one would also hand bbolt's
	// pending pages back to intake, so a port waiting behind tickets that
	// cannot print would take a job on the next poll for no room anyone
	// made.
	var lacking bool
	if err := s.view(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketDone).Cursor().First()
		lacking = short(tx) > 0 && k != nil
		return nil
	}); err != nil || !lacking {
		return 0, err // nothing finished to drop; a compaction may still make the room
	}
	var n int
	op := &op{prepare: func(*bolt.Tx) error { n = 0; return nil }}
	op.apply = func(tx *bolt.Tx) error {
		if short(tx) <= 0 {
			return nil
		}
		var err error
		_, n, err = s.reclaim(tx, "", short(tx))
		return err
	}
	if err := s.submit(op); err != nil {
		return 0, fmt.Errorf("make room in spool %s: %w", s.path, err)
	}
	return n, nil
}

// Fragmented reports whether Compact should rewrite the file: it has grown
// to within a tenth of the size at which intake stops (limits) while a
// tenth or more of it is free, or intake was refused on the file since the
// last compaction while a ticket's worth of it is free. bbolt takes free
// pages only in runs long enough, so such a file refuses new tickets at a
// cap the live data is far from.
func (s *Spool) Fragmented() bool {
	if !s.lim.capped {
		return false
	}
	s.strain.mu.Lock()
	wanted, wantRoom := s.strain.compactWanted, s.strain.wantRoom
	s.strain.mu.Unlock()
	var frag bool
	_ = s.view(func(tx *bolt.Tx) error {
		st := tx.DB().Stats()
		size, free := tx.Size(), int64(st.FreeAlloc)
		// A door's wish (Room, MakeFileRoom) is met by a compaction that
		// leaves it the room it asked for, however little was free.
		gives := wantRoom > 0 && s.lim.intake-(size-free) >= wantRoom
		frag = (size >= s.lim.intake*9/10 && free >= size/10) || (wanted && (free >= s.transitionNeed() || gives))
		return nil
	})
	return frag
}
