package spool

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The retention clock is what retention and the dedupe window are
// measured on: the time a task ended (its done key) and the cut of every
// Prune are readings of it, never of the wall clock. The wall clock of a
// store PC is stepped: a flat CMOS battery starts it years behind and NTP
// steps it forward later, or a manager sets it back. Measured on the wall
// clock, a ticket that ended while the clock was behind was already "two
// years old" at the first prune after the step, lost its tombstone, and a
// resend of it printed again, unmarked.
//
// Within a run the clock advances by the time elapsed on a clock no one
// steps (Options.Elapsed; the monotonic clock by default). Across runs it
// continues from its reading stored in the spool, plus the wall time that
// passed since that reading was stored, when the wall clock moved forward:
// the time the agent was down. A backward step between runs adds nothing
// and never takes the clock back. The reading is stored with the wall time
// at every terminal transition and every Prune, in their transactions, so a
// step during a run is not mistaken for downtime at the next start. Only a
// step while the agent is down is, and that is indistinguishable from
// downtime.
type retentionClock struct {
	mu      sync.Mutex
	base    time.Time            // the reading at Open
	elapsed func() time.Duration // time since Open, unstepped
	last    time.Time            // the latest reading: never goes back
}

// keyRetentionClock holds the retention clock's last stored reading and the
// wall time it was stored at, unix nanoseconds each (16 bytes).
var keyRetentionClock = []byte("retention-clock")

// openRetentionClock starts the clock of the spool in db from its stored
// reading, as described on retentionClock, and stores the start.
func openRetentionClock(db *bolt.DB, opts Options) (*retentionClock, error) {
	wall := opts.Now()
	elapsed := opts.Elapsed
	if elapsed == nil {
		// time.Now's readings carry the monotonic clock, and Sub uses it.
		start := wall
		elapsed = func() time.Duration { return max(0, opts.Now().Sub(start)) }
	}
	c := &retentionClock{base: wall.Round(0), elapsed: elapsed}
	err := db.Update(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyRetentionClock); len(v) == 16 {
			reading := time.Unix(0, int64(binary.BigEndian.Uint64(v[:8])))
			stored := time.Unix(0, int64(binary.BigEndian.Uint64(v[8:])))
			c.base = reading.Add(max(0, wall.Sub(stored)))
		}
		c.last = c.base
		return c.store(tx, wall)
	})
	if err != nil {
		return nil, fmt.Errorf("start the retention clock: %w", err)
	}
	return c, nil
}

// now is the clock's reading.
func (c *retentionClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.base.Add(c.elapsed()); t.After(c.last) {
		c.last = t
	}
	return c.last
}

// store records the clock's reading, with the wall time wall, in tx.
func (c *retentionClock) store(tx *bolt.Tx, wall time.Time) error {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v[:8], uint64(c.now().UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(wall.UnixNano()))
	return tx.Bucket(bucketMeta).Put(keyRetentionClock, v)
}

// retentionNow is the retention clock's reading.
func (s *Spool) retentionNow() time.Time { return s.age.now() }
