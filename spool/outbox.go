package spool

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

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
	var out []OutboxEvent
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil && len(out) < n; k, v = c.Next() {
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

// OutboxDepth returns how many events wait for the cloud's acknowledgement.
func (s *Spool) OutboxDepth() (int, error) {
	var n uint64
	err := s.view(func(tx *bolt.Tx) error {
		n = getU64(tx.Bucket(bucketMeta), keyOutbox)
		return nil
	})
	return int(n), err
}
