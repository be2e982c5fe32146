package spool

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// Transition moves a task from state from to state to, recording c, and
// appends the timeline entry and outbox event in the same transaction. It
// returns the task as stored after the change, once fsync'd.
//
// It is compare-and-set: if the stored state is not from, it returns
// ErrStateChanged and changes nothing, so a decision taken on a stale copy
// never overwrites a newer one. A move the state table does not allow
// returns ErrIllegalTransition and changes nothing; an unknown task_no
// returns ErrNotFound.
func (s *Spool) Transition(taskNo string, from, to State, c Change) (*Task, error) {
	return s.TransitionPath(taskNo, from, []State{to}, c)
}

// TransitionPath moves a task through each state of path in turn, in one
// transaction: every step is checked against the state table and gets its
// own timeline entry and outbox event, exactly as separate Transitions would,
// but the whole path costs one fsync. c applies to the last step; the
// earlier ones record only their state. If any step is illegal nothing
// changes. Like Transition it is compare-and-set on from. A lane uses it to
// take a task it can print at once from ACCEPTED through QUEUED to SENDING
// before the first job byte leaves, and renders the job from the task it
// returns, so banners and flags are the ones stored by that transaction.
func (s *Spool) TransitionPath(taskNo string, from State, path []State, c Change) (*Task, error) {
	var cur, out *Task
	o := &op{}
	o.prepare = func(tx *bolt.Tx) error {
		cur, out = nil, nil
		t, err := s.checkPath(tx, taskNo, from, path)
		cur = t
		return err
	}
	o.apply = func(tx *bolt.Tx) error {
		t := cur
		for i, to := range path {
			step := Change{}
			if i == len(path)-1 {
				step = c
			}
			next, err := s.applyTransition(tx, t, to, step)
			if err != nil {
				return err
			}
			t = next
		}
		out = t
		return nil
	}
	if err := s.submit(o); err != nil {
		return nil, err
	}
	return out, nil
}

// applyTransition writes one checked transition of cur inside tx and returns
// the task as stored after it.
func (s *Spool) applyTransition(tx *bolt.Tx, cur *Task, to State, c Change) (*Task, error) {
	t := *cur
	t.Timeline = append([]TimelineEntry(nil), cur.Timeline...)
	from := t.State
	oldKey := queueKey(t.Lane(), t.Priority, t.Seq)

	t.State = to
	t.UpdatedAt = nowRounded(s.opts.Now)
	t.Reason = c.Reason
	t.Message = c.Message
	if c.Attempts != nil {
		t.Attempts = *c.Attempts
	}
	if c.NextDue != nil {
		t.NextDue = c.NextDue.Round(0)
	}
	if c.Target != nil {
		if *c.Target == t.Printer {
			t.Target = ""
		} else {
			t.Target = *c.Target
		}
	}
	if c.PossibleDuplicate != nil {
		t.PossibleDuplicate = *c.PossibleDuplicate
	}
	if to == StatePrinted {
		t.Confirmation = c.Confirmation
	}
	t.Timeline = append(t.Timeline, TimelineEntry{State: to, At: t.UpdatedAt, Reason: c.Reason, Printer: t.Lane(), Attempts: t.Attempts})
	ev := eventFor(&t, to, c.Reason)
	t.Events++

	q := tx.Bucket(bucketQueue)
	switch newKey := queueKey(t.Lane(), t.Priority, t.Seq); {
	case to.Terminal():
		if err := q.Delete(oldKey); err != nil {
			return nil, err
		}
		// Keyed on the retention clock, which a step of the wall clock
		// does not move (retentionclock.go), stored with it.
		if err := tx.Bucket(bucketDone).Put(timeKey(s.retentionNow(), t.TaskNo), nil); err != nil {
			return nil, err
		}
		if err := s.age.store(tx, t.UpdatedAt); err != nil {
			return nil, err
		}
	case !bytes.Equal(oldKey, newKey):
		if err := q.Delete(oldKey); err != nil {
			return nil, err
		}
		if err := q.Put(newKey, []byte(t.TaskNo)); err != nil {
			return nil, err
		}
	}
	if err := putTask(tx, &t); err != nil {
		return nil, err
	}
	if err := s.putEvent(tx, ev); err != nil {
		return nil, err
	}
	meta := tx.Bucket(bucketMeta)
	if from != to {
		if err := addCount(meta, from, -1); err != nil {
			return nil, err
		}
		if err := addCount(meta, to, 1); err != nil {
			return nil, err
		}
	}
	return &t, nil
}
