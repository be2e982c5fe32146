package spool

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Move is one task's transition in a TransitionBatch: from the state From
// the caller believes the task is in, through each state of Path in turn,
// with Change applied on the last step.
type Move struct {
	TaskNo string
	From   State
	Path   []State
	Change Change
}

// MoveResult is the outcome of one Move: the task as stored after it, or why
// it was refused (ErrNotFound, ErrIllegalTransition, ErrStateChanged). A
// refused move changes
// nothing; the others in the batch still happen.
type MoveResult struct {
	Task *Task
	Err  error
}

// TransitionBatch applies many moves in one transaction, so parking or
// resuming a whole lane costs one fsync instead of one per task. Each move is
// checked against the state table and recorded exactly as TransitionPath
// would record it. A task may appear once per batch. The error is for the
// batch as a whole (ErrFull, I/O); per-move refusals are in the results.
func (s *Spool) TransitionBatch(moves []Move) ([]MoveResult, error) {
	results := make([]MoveResult, len(moves))
	cur := make([]*Task, len(moves))
	o := &op{}
	o.prepare = func(tx *bolt.Tx) error {
		seen := make(map[string]bool, len(moves))
		for i, m := range moves {
			results[i], cur[i] = MoveResult{}, nil
			if seen[m.TaskNo] {
				results[i].Err = fmt.Errorf("transition %s: %w: twice in one batch", m.TaskNo, ErrIllegalTransition)
				continue
			}
			seen[m.TaskNo] = true
			t, err := s.checkPath(tx, m.TaskNo, m.From, m.Path)
			if err != nil {
				results[i].Err = err
				continue
			}
			cur[i] = t
		}
		return nil
	}
	o.apply = func(tx *bolt.Tx) error {
		for i, m := range moves {
			if cur[i] == nil {
				continue
			}
			t := cur[i]
			for j, to := range m.Path {
				step := Change{}
				if j == len(m.Path)-1 {
					step = m.Change
				}
				next, err := s.applyTransition(tx, t, to, step)
				if err != nil {
					return err
				}
				t = next
			}
			results[i].Task = t
		}
		return nil
	}
	if err := s.submit(o); err != nil {
		return nil, err
	}
	return results, nil
}

// checkPath reads taskNo, compares its stored state with the caller's
// expected from-state, and checks every step of path against the state
// table, without writing. A stored state other than from is ErrStateChanged:
// someone else moved the task since the caller last read it, and applying
// the caller's decision would overwrite theirs.
func (s *Spool) checkPath(tx *bolt.Tx, taskNo string, from State, path []State) (*Task, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("transition %s: %w: empty path", taskNo, ErrIllegalTransition)
	}
	raw := tx.Bucket(bucketTasks).Get([]byte(taskNo))
	if raw == nil {
		return nil, fmt.Errorf("transition %s: %w", taskNo, ErrNotFound)
	}
	t, err := decodeTask(raw)
	if err != nil {
		return nil, fmt.Errorf("transition %s: %w", taskNo, err)
	}
	if t.State != from {
		return nil, fmt.Errorf("transition %s: %w: expected %s, stored %s", taskNo, ErrStateChanged, from, t.State)
	}
	for _, to := range path {
		if !to.Valid() {
			return nil, fmt.Errorf("transition %s: %w: unknown state %q", taskNo, ErrIllegalTransition, to)
		}
		if t.Pruned || !CanTransition(from, to) {
			return nil, fmt.Errorf("transition %s: %w: %s → %s", taskNo, ErrIllegalTransition, from, to)
		}
		from = to
	}
	return t, nil
}
