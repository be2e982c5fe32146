package spool

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Per-origin quotas: each door (the LAN API, the cloud, the
// raw ports, reprint) may fill at most its share of the spool, so a flood
// through one door (the raw port takes anyone on the LAN) cannot starve the
// others. What a task costs its origin is charged at accept and given back
// when retention drops its body; the running totals live in the meta
// bucket, in the same transactions, so they survive restarts and crashes.

// taskOverhead is what a task costs beyond its body's base64 on disk: the
// record's fields and timeline, its indexes and its outbox events.
const taskOverhead = 1 << 10

// Charge is what a task with a body of size bytes counts against its
// origin's quota: its body as stored (base64, 4/3 of it) plus
// taskOverhead, about what it takes in the file.
func Charge(size int) int64 { return int64(size)*4/3 + taskOverhead }

// keyOriginsCounted marks a file whose per-origin totals are kept; a file
// without it (written before quotas, or just salvaged) is counted once at
// Open.
var keyOriginsCounted = []byte("origin_bytes_counted")

func originKey(o Origin) []byte { return []byte("origin_bytes:" + string(o)) }

// addOrigin moves origin o's total by delta, never below zero.
func addOrigin(meta *bolt.Bucket, o Origin, delta int64) error {
	k := originKey(o)
	v := int64(getU64(meta, k)) + delta
	if v < 0 {
		v = 0
	}
	return meta.Put(k, u64(uint64(v)))
}

// countOrigins writes the per-origin totals of a file that has none, from
// the tasks that still hold a body. It reads every record once, so it runs
// only the first time a file is opened by a build that keeps the totals.
func countOrigins(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta.Get(keyOriginsCounted) != nil {
			return nil
		}
		totals := map[Origin]int64{}
		tasks := tx.Bucket(bucketTasks)
		err := tx.Bucket(bucketSeq).ForEach(func(_, taskNo []byte) error {
			raw := tasks.Get(taskNo)
			if raw == nil {
				return nil
			}
			t, err := decodeTask(raw)
			if err != nil || t.Pruned {
				// An unreadable record is Quarantine's business; it
				// costs nothing here.
				return nil
			}
			totals[t.Origin] += Charge(t.Size)
			return nil
		})
		if err != nil {
			return err
		}
		for _, o := range Origins() {
			if err := meta.Put(originKey(o), u64(uint64(totals[o]))); err != nil {
				return err
			}
		}
		return meta.Put(keyOriginsCounted, []byte{1})
	})
}

// QuotaError is the refusal of a task whose origin has used its quota
// (Options.Quotas). It wraps ErrFull, so every door answers it as it
// answers a full spool; the agent names the door and the key that raises
// the quota.
type QuotaError struct {
	Origin Origin
	// Used is what the origin's tasks in the spool count now, Quota its
	// limit, Need what the refused task would have added.
	Used, Quota, Need int64
}

// Error says which origin is over which limit.
func (e *QuotaError) Error() string {
	return fmt.Sprintf("%s: the %s tasks in the spool use %d of their %d byte quota, and this one needs %d more", ErrFull, e.Origin, e.Used, e.Quota, e.Need)
}

// Unwrap makes a QuotaError an ErrFull.
func (e *QuotaError) Unwrap() error { return ErrFull }

// overQuota returns the refusal of a task of origin o charged need bytes,
// or nil when its quota has room (or it has none).
func (s *Spool) overQuota(tx *bolt.Tx, o Origin, need int64) error {
	q, ok := s.opts.Quotas[o]
	if !ok || q <= 0 {
		return nil
	}
	used := int64(getU64(tx.Bucket(bucketMeta), originKey(o)))
	if used+need > q {
		return &QuotaError{Origin: o, Used: used, Quota: q, Need: need}
	}
	return nil
}

// OriginUsage is one origin's share of the spool, for the health report
// and the doors that refuse before reading a job (the raw ports).
type OriginUsage struct {
	// Used is what the origin's tasks in the spool count (Charge).
	Used int64
	// Quota is its limit; 0 when it has none.
	Quota int64
}

// Full reports whether a task of need more bytes would be refused.
func (u OriginUsage) Full(need int64) bool { return u.Quota > 0 && u.Used+need > u.Quota }

// Origin reports how much of its quota origin o uses.
func (s *Spool) Origin(o Origin) (OriginUsage, error) {
	u := OriginUsage{Quota: s.opts.Quotas[o]}
	err := s.view(func(tx *bolt.Tx) error {
		u.Used = int64(getU64(tx.Bucket(bucketMeta), originKey(o)))
		return nil
	})
	if err != nil {
		return OriginUsage{}, err
	}
	return u, nil
}
