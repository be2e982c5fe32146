package spool

import (
	"fmt"

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

// reclaim drops, oldest finished first, the bodies of terminal tasks of
// origin o (of any origin when o is ""), until their charges (Charge)
// freed reach need or the chunk is spent. It returns what was freed and
// how many tasks lost their body.
func (s *Spool) reclaim(tx *bolt.Tx, o Origin, need int64) (freed int64, n int, err error) {
	tasks := tx.Bucket(bucketTasks)
	var keys [][]byte
	c := tx.Bucket(bucketDone).Cursor()
	var scanned int
	var want int64
	for k, _ := c.First(); k != nil && want < need && len(keys) < reclaimChunk && scanned < reclaimScan; k, _ = c.Next() {
		scanned++
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
		if t.Pruned || !t.State.Terminal() || (o != "" && t.Origin != o) {
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
			freed += Charge(t.Size)
			n++
		}
	}
	s.reclaimed.Add(int64(n))
	return freed, n, nil
}

// nearSoftCap reports whether live data has reached reclaimHighWater of
// the soft cap (MaxSize minus Reserve), and how far past that it is.
func (s *Spool) nearSoftCap(tx *bolt.Tx) (bool, int64) {
	if s.opts.MaxSize <= 0 || s.opts.Reserve < 0 {
		return false, 0
	}
	st := tx.DB().Stats()
	live := tx.Size() - int64(st.FreeAlloc)
	mark := (s.opts.MaxSize - s.opts.Reserve) * reclaimHighWater / 100
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

// Fragmented reports whether the file has grown to within a tenth of its
// cap while a fifth or more of it is free: then a new ticket may find no
// run of free pages long enough and be refused at a cap the live data is
// far from, and Compact should rewrite the file.
func (s *Spool) Fragmented() bool {
	if s.opts.MaxSize <= 0 {
		return false
	}
	var frag bool
	_ = s.view(func(tx *bolt.Tx) error {
		st := tx.DB().Stats()
		size := tx.Size()
		frag = size >= s.opts.MaxSize*9/10 && int64(st.FreeAlloc) >= size/5
		return nil
	})
	return frag
}
