package spool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The outbox is bounded (docs/DESIGN.md, invariant 4): without a cloud link nothing
// reads it, so a store-only install must not grow it without limit, and a
// long WAN outage must not end in ErrFull.
const (
	defaultOutboxMax = 100_000
	defaultOutboxAge = 7 * 24 * time.Hour
)

// Meta keys of the outbox's loss counters.
var (
	keyOutboxCompacted = []byte("outbox_compacted")
	keyOutboxDropped   = []byte("outbox_dropped")
)

// OutboxOptions say whether the outbox is written and how far it may grow.
// The zero value writes it, capped at 100,000 events and 7 days.
type OutboxOptions struct {
	// Disabled stops writing outbox events: a store without a cloud link
	// owes nobody events. Tasks still number every transition (Task.Events
	// counts them), so an outbox enabled later goes on with each task's next
	// number. Events written before stay until the cloud acknowledges them
	// or TrimOutbox ages them out.
	Disabled bool
	// MaxEvents caps the outbox depth. A write that takes it over the cap
	// compacts the outbox down to 90% of it in one pass (see TrimOutbox for
	// what goes first). Default 100,000.
	MaxEvents int
	// MaxAge is how long an event may wait for the cloud before TrimOutbox
	// removes it. Default 7 days.
	MaxAge time.Duration
}

func (o OutboxOptions) withDefaults() OutboxOptions {
	if o.MaxEvents <= 0 {
		o.MaxEvents = defaultOutboxMax
	}
	if o.MaxAge <= 0 {
		o.MaxAge = defaultOutboxAge
	}
	return o
}

// outboxLowWater is the depth an outbox over its cap is compacted down to:
// one pass over the outbox then pays for the next tenth of the cap's writes.
func outboxLowWater(max int) int { return max - max/10 }

// OutboxStats says how deep the outbox is and what bounding it cost. The
// counters persist in the spool file and only grow.
type OutboxStats struct {
	// Depth is how many events wait for the cloud's acknowledgement.
	Depth int
	// Compacted counts events removed while a later event of the same task
	// stayed: the cloud still learns that task's latest state.
	Compacted int
	// Dropped counts events removed that were their task's latest: the cloud
	// will not learn that state from this spool. Any non-zero value is a loss
	// the agent reports.
	Dropped int
}

// OutboxEvent is an event read from the outbox with the key that
// acknowledges it.
type OutboxEvent struct {
	Event
	Key []byte
}

// ReadOutbox returns up to n of the oldest-keyed outbox events: in task_no
// order, and by event number within a task. It removes nothing; AckOutbox
// does once the cloud has confirmed them.
func (s *Spool) ReadOutbox(n int) ([]OutboxEvent, error) {
	return s.ReadOutboxSkipping(n, func([]byte) bool { return false })
}

// ReadOutboxSkipping is ReadOutbox for a reader that already holds some
// events (sent, not yet acknowledged): it returns up to n of the
// oldest-keyed events whose key skip refuses, decoding only those. The
// cloud link uses it to fill its next batch without decoding again the
// batches it has in flight.
func (s *Spool) ReadOutboxSkipping(n int, skip func(key []byte) bool) ([]OutboxEvent, error) {
	var out []OutboxEvent
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil && len(out) < n; k, v = c.Next() {
			if skip(k) {
				continue
			}
			var ev OutboxEvent
			if err := json.Unmarshal(v, &ev.Event); err != nil {
				return fmt.Errorf("read outbox: decode %q: %w", k, err)
			}
			ev.Key = append([]byte(nil), k...)
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

// AckOutbox deletes the events with these keys (as returned by ReadOutbox).
// Keys already gone are ignored, so a repeated acknowledgement is harmless.
func (s *Spool) AckOutbox(keys [][]byte) error {
	deleted := 0
	o := &op{
		prepare: func(*bolt.Tx) error { deleted = 0; return nil },
		apply: func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketOutbox)
			for _, k := range keys {
				if b.Get(k) == nil {
					continue
				}
				if err := b.Delete(k); err != nil {
					return err
				}
				deleted++
			}
			meta := tx.Bucket(bucketMeta)
			depth := getU64(meta, keyOutbox)
			if uint64(deleted) > depth {
				depth = uint64(deleted)
			}
			return meta.Put(keyOutbox, u64(depth-uint64(deleted)))
		},
	}
	if err := s.submit(o); err != nil {
		return fmt.Errorf("ack outbox: %w", err)
	}
	return nil
}

// OutboxStats returns the outbox depth and the persistent counts of events
// compacted and dropped to keep it within its bounds.
func (s *Spool) OutboxStats() (OutboxStats, error) {
	var st OutboxStats
	err := s.view(func(tx *bolt.Tx) error {
		st = readOutboxStats(tx.Bucket(bucketMeta))
		return nil
	})
	return st, err
}

func readOutboxStats(meta *bolt.Bucket) OutboxStats {
	return OutboxStats{
		Depth:     int(getU64(meta, keyOutbox)),
		Compacted: int(getU64(meta, keyOutboxCompacted)),
		Dropped:   int(getU64(meta, keyOutboxDropped)),
	}
}

// TrimOutbox enforces the outbox's bounds as of now; the agent calls it from
// its hourly maintenance, whether or not the outbox is enabled (events
// written before it was disabled must age out too). Events older than
// MaxAge go: an event with a later event of its task still in the outbox is
// counted as compacted, a task's latest event as dropped. Then, if the
// outbox is still over MaxEvents (the cap was lowered), it is compacted like
// an overflowing write does. The result counts what this call removed, with
// the depth after it. It works in bounded transactions and may be called at
// any time.
func (s *Spool) TrimOutbox(now time.Time) (OutboxStats, error) {
	var total OutboxStats
	cut := now.Add(-s.opts.Outbox.MaxAge)
	var old [][]byte
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var ev struct {
				At time.Time `json:"at"`
			}
			// An event that does not decode has no age to keep it: it goes
			// with the old ones.
			if json.Unmarshal(v, &ev) != nil || ev.At.Before(cut) {
				old = append(old, append([]byte(nil), k...))
			}
		}
		return nil
	})
	if err != nil {
		return total, fmt.Errorf("trim outbox: %w", err)
	}
	for len(old) > 0 {
		chunk := old[:min(len(old), pruneChunk)]
		old = old[len(chunk):]
		var st outboxTrim
		o := &op{
			prepare: func(*bolt.Tx) error { st = outboxTrim{}; return nil },
			apply: func(tx *bolt.Tx) error {
				var err error
				st, err = deleteOutboxKeys(tx, chunk)
				return err
			},
		}
		if err := s.submit(o); err != nil {
			return total, fmt.Errorf("trim outbox: %w", err)
		}
		total.Compacted += st.compacted
		total.Dropped += st.dropped
	}
	var st outboxTrim
	o := &op{
		prepare: func(*bolt.Tx) error { st = outboxTrim{}; return nil },
		apply: func(tx *bolt.Tx) error {
			var err error
			st = outboxTrim{}
			if max := s.opts.Outbox.MaxEvents; getU64(tx.Bucket(bucketMeta), keyOutbox) > uint64(max) {
				st, err = shrinkOutbox(tx, outboxLowWater(max))
			}
			total.Depth = int(getU64(tx.Bucket(bucketMeta), keyOutbox))
			return err
		},
	}
	if err := s.submit(o); err != nil {
		return total, fmt.Errorf("trim outbox: %w", err)
	}
	total.Compacted += st.compacted
	total.Dropped += st.dropped
	return total, nil
}

// putEvent appends ev to the outbox unless the outbox is disabled, and
// keeps it within MaxEvents: the write that takes it over compacts it down
// to the low-water mark, so the scan that costs is paid once per tenth of
// the cap.
func (s *Spool) putEvent(tx *bolt.Tx, ev *Event) error {
	if s.opts.Outbox.Disabled {
		return nil
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %s/%d: %w", ev.TaskNo, ev.N, err)
	}
	if err := tx.Bucket(bucketOutbox).Put(outboxKey(ev.TaskNo, ev.N), raw); err != nil {
		return err
	}
	meta := tx.Bucket(bucketMeta)
	depth := getU64(meta, keyOutbox) + 1
	if err := meta.Put(keyOutbox, u64(depth)); err != nil {
		return err
	}
	if max := s.opts.Outbox.MaxEvents; depth > uint64(max) {
		if _, err := shrinkOutbox(tx, outboxLowWater(max)); err != nil {
			return fmt.Errorf("bound outbox at %d events: %w", max, err)
		}
	}
	return nil
}

// outboxTrim counts what one bounding pass removed.
type outboxTrim struct{ compacted, dropped int }

// outboxTask is the task part of an outbox key (task_no 0x00 n), 0x00
// included, so two keys of one task share it.
func outboxTask(k []byte) []byte {
	if len(k) < 5 {
		return k
	}
	return k[:len(k)-4]
}

// shrinkOutbox brings the outbox down to target events in tx. First it
// compacts: superseded events go, in key order, and each task keeps its
// latest event; a task's first event left inherits the job description of
// the first event that went. Only if every task is down to one event and that is still too many,
// the oldest events (by their time) are dropped. Counters stay exact.
func shrinkOutbox(tx *bolt.Tx, target int) (outboxTrim, error) {
	var st outboxTrim
	b, meta := tx.Bucket(bucketOutbox), tx.Bucket(bucketMeta)
	depth := int(getU64(meta, keyOutbox))
	excess := depth - target
	if excess <= 0 {
		return st, nil
	}

	// Compaction: collect superseded keys first (deleting under a live
	// cursor skips entries), finishing the task in hand so its first event
	// left is known when a job description must move to it.
	var gone [][]byte
	carry := map[string]*JobInfo{} // key → job of the task's removed first event
	var prev []byte
	var prevJob, job *JobInfo
	c := b.Cursor()
	for k, v := c.First(); ; k, v = c.Next() {
		same := prev != nil && k != nil && bytes.Equal(outboxTask(k), outboxTask(prev))
		if prev != nil && !same {
			if job != nil {
				carry[string(prev)] = job
			}
			job = nil
			if len(gone) >= excess {
				break
			}
		}
		if k == nil {
			break
		}
		switch {
		case same && len(gone) < excess:
			gone = append(gone, prev)
			if job == nil {
				job = prevJob
			}
		case same && job != nil:
			// Enough removed: prev is the task's first event left.
			carry[string(prev)] = job
			job = nil
		}
		prevJob = nil
		if bytes.Contains(v, []byte(`"job"`)) {
			var ev Event
			if json.Unmarshal(v, &ev) == nil {
				prevJob = ev.Job
			}
		}
		prev = append([]byte(nil), k...)
	}
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return st, err
		}
	}
	for k, j := range carry {
		var ev Event
		raw := b.Get([]byte(k))
		if raw == nil || json.Unmarshal(raw, &ev) != nil || ev.Job != nil {
			continue
		}
		ev.Job = j
		enc, err := json.Marshal(&ev)
		if err != nil {
			return st, fmt.Errorf("encode event %s/%d: %w", ev.TaskNo, ev.N, err)
		}
		if err := b.Put([]byte(k), enc); err != nil {
			return st, err
		}
	}
	st.compacted = len(gone)
	excess -= len(gone)

	// Loss: every task is down to its latest event; the oldest go.
	if excess > 0 {
		type aged struct {
			at  time.Time
			key []byte
		}
		var all []aged
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var ev struct {
				At time.Time `json:"at"`
			}
			_ = json.Unmarshal(v, &ev) // undecodable: zero time, goes first
			all = append(all, aged{ev.At, append([]byte(nil), k...)})
		}
		slices.SortFunc(all, func(a, b aged) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return bytes.Compare(a.key, b.key)
		})
		for _, a := range all[:min(excess, len(all))] {
			if err := b.Delete(a.key); err != nil {
				return st, err
			}
			st.dropped++
		}
	}
	return st, addOutboxTrim(meta, st)
}

// deleteOutboxKeys removes these outbox keys (those still there), counting
// each as compacted when a later event of its task stays and as dropped
// when it was the task's latest. Keys are taken in order, so a task's old
// events count as compacted up to its latest.
func deleteOutboxKeys(tx *bolt.Tx, keys [][]byte) (outboxTrim, error) {
	var st outboxTrim
	b := tx.Bucket(bucketOutbox)
	for _, k := range keys {
		c := b.Cursor()
		if got, _ := c.Seek(k); !bytes.Equal(got, k) {
			continue
		}
		later, _ := c.Next()
		if err := b.Delete(k); err != nil {
			return st, err
		}
		if later != nil && bytes.Equal(outboxTask(later), outboxTask(k)) {
			st.compacted++
		} else {
			st.dropped++
		}
	}
	return st, addOutboxTrim(tx.Bucket(bucketMeta), st)
}

// addOutboxTrim takes what a bounding pass removed off the depth and adds it
// to the persistent counters.
func addOutboxTrim(meta *bolt.Bucket, st outboxTrim) error {
	removed := uint64(st.compacted + st.dropped)
	if removed == 0 {
		return nil
	}
	depth := getU64(meta, keyOutbox)
	if removed > depth {
		removed = depth
	}
	if err := meta.Put(keyOutbox, u64(depth-removed)); err != nil {
		return err
	}
	if err := meta.Put(keyOutboxCompacted, u64(getU64(meta, keyOutboxCompacted)+uint64(st.compacted))); err != nil {
		return err
	}
	return meta.Put(keyOutboxDropped, u64(getU64(meta, keyOutboxDropped)+uint64(st.dropped)))
}

// OutboxDepth returns how many events wait for the cloud's acknowledgement.
func (s *Spool) OutboxDepth() (int, error) {
	var n uint64
	err := s.view(func(tx *bolt.Tx) error {
		n = getU64(tx.Bucket(bucketMeta), keyOutbox)
		return nil
	})
	return int(n), err
}
