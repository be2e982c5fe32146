package spool

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Get returns the task with that task_no, or ErrNotFound. A pruned task
// comes back as its tombstone (Pruned set, no body or timeline).
func (s *Spool) Get(taskNo string) (*Task, error) {
	var t *Task
	err := s.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketTasks).Get([]byte(taskNo))
		if raw == nil {
			return fmt.Errorf("get %s: %w", taskNo, ErrNotFound)
		}
		var err error
		t, err = decodeTask(raw)
		return err
	})
	return t, err
}

// Queue returns the non-terminal tasks whose lane is printer, in queue order:
// urgent before normal, then by accept sequence. The agent rebuilds a lane
// from it at start.
func (s *Spool) Queue(printer string) ([]*Task, error) {
	var out []*Task
	err := s.view(func(tx *bolt.Tx) error {
		tasks := tx.Bucket(bucketTasks)
		prefix := lanePrefix(printer)
		c := tx.Bucket(bucketQueue).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			raw := tasks.Get(v)
			if raw == nil {
				return fmt.Errorf("queue %s: index names missing task %s", printer, v)
			}
			t, err := decodeTask(raw)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// Lanes returns the names of every lane that holds non-terminal tasks, so the
// agent can find tasks for printers no longer in its config.
func (s *Spool) Lanes() ([]string, error) {
	var out []string
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketQueue).Cursor()
		for k, _ := c.First(); k != nil; {
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				return fmt.Errorf("lanes: malformed queue key %q", k)
			}
			lane := string(k[:i])
			out = append(out, lane)
			// Jump past this lane: 0x01 sorts after every 0x00-separated key.
			k, _ = c.Seek(append([]byte(lane), 1))
		}
		return nil
	})
	return out, err
}

// ListOptions filter and page a List call.
type ListOptions struct {
	State   State  // only tasks in this state, if set
	Printer string // only tasks whose printer or target is this, if set
	After   uint64 // the cursor: the Next of the previous page (0: start)
	Limit   int    // page size, default 50, at most 1000
	Desc    bool   // newest first
}

// Page is one page of List results.
type Page struct {
	Tasks []*Task
	// Next is the cursor for the following page, 0 when there is none.
	Next uint64
}

// List returns tasks in accept order (or newest first with Desc), filtered by
// state and printer, one page at a time. Pruned tasks are not listed.
func (s *Spool) List(o ListOptions) (Page, error) {
	if o.Limit <= 0 {
		o.Limit = 50
	}
	if o.Limit > 1000 {
		o.Limit = 1000
	}
	var p Page
	err := s.view(func(tx *bolt.Tx) error {
		tasks := tx.Bucket(bucketTasks)
		c := tx.Bucket(bucketSeq).Cursor()
		var k, v []byte
		switch {
		case !o.Desc && o.After == 0:
			k, v = c.First()
		case !o.Desc:
			k, v = c.Seek(u64(o.After + 1))
		case o.After == 0:
			k, v = c.Last()
		default:
			k, v = c.Seek(u64(o.After))
			if k == nil {
				k, v = c.Last()
			}
			if k != nil && binary.BigEndian.Uint64(k) >= o.After {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = step(c, o.Desc) {
			raw := tasks.Get(v)
			if raw == nil {
				continue
			}
			t, err := decodeTask(raw)
			if err != nil {
				return err
			}
			if o.State != "" && t.State != o.State {
				continue
			}
			if o.Printer != "" && t.Printer != o.Printer && t.Target != o.Printer {
				continue
			}
			if len(p.Tasks) == o.Limit {
				p.Next = p.Tasks[len(p.Tasks)-1].Seq
				return nil
			}
			p.Tasks = append(p.Tasks, t)
		}
		return nil
	})
	return p, err
}

func step(c *bolt.Cursor, desc bool) ([]byte, []byte) {
	if desc {
		return c.Prev()
	}
	return c.Next()
}

// Counts returns how many tasks are in each state (pruned tombstones are
// not counted). It reads counters kept by every transaction, not the tasks.
func (s *Spool) Counts() (map[State]int, error) {
	out := make(map[State]int, len(AllStates))
	err := s.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		for _, st := range AllStates {
			if n := getU64(meta, countKey(st)); n > 0 {
				out[st] = int(n)
			}
		}
		return nil
	})
	return out, err
}

// QueueItem is one entry of a lane's queue as QueuePage reads it: the task,
// or, when its stored record cannot be decoded, Err with what the queue key
// itself says (task_no, priority, seq), so the caller can quarantine that
// one record and carry on with the rest.
type QueueItem struct {
	Task     *Task
	TaskNo   string
	Priority Priority
	Seq      uint64
	Err      error

	key []byte // valid only inside QueuePage's transaction
}

// QueuePage returns up to limit entries of lane's queue in queue order,
// starting after the key after (nil: from the start), and the key to pass
// for the next page (nil when the lane has no more). The agent restores a
// lane page by page, so a backlog of any size is read in bounded memory and
// the first page can print while later ones load.
func (s *Spool) QueuePage(lane string, after []byte, limit int) ([]QueueItem, []byte, error) {
	if limit <= 0 {
		limit = 512
	}
	var out []QueueItem
	var next []byte
	err := s.view(func(tx *bolt.Tx) error {
		tasks := tx.Bucket(bucketTasks)
		prefix := lanePrefix(lane)
		c := tx.Bucket(bucketQueue).Cursor()
		k, v := c.Seek(prefix)
		if after != nil {
			k, v = c.Seek(after)
			if k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(out) == limit {
				next = append([]byte(nil), out[len(out)-1].key...)
				return nil
			}
			it := QueueItem{TaskNo: string(v), key: k}
			if rest := k[len(prefix):]; len(rest) == 9 {
				it.Priority = PriorityNormal
				if rest[0] == priorityRank(PriorityUrgent) {
					it.Priority = PriorityUrgent
				}
				it.Seq = binary.BigEndian.Uint64(rest[1:])
			}
			raw := tasks.Get(v)
			if raw == nil {
				it.Err = fmt.Errorf("queue %s: index names missing task %s: %w", lane, v, ErrCorruptRecord)
			} else if t, err := decodeTask(raw); err != nil {
				it.Err = fmt.Errorf("queue %s: task %s: %w: %v", lane, v, ErrCorruptRecord, err)
			} else {
				it.Task = t
			}
			out = append(out, it)
		}
		return nil
	})
	for i := range out {
		out[i].key = nil
	}
	return out, next, err
}
