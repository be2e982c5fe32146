package spool

import (
	"errors"
	"fmt"
	"slices"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// op is one write submitted to the commit loop. prepare runs first and only
// reads; an error from it fails this op alone and the transaction goes on.
// apply writes; an error from it poisons the transaction, which is rolled
// back and run again without this op. Both must be safe to run again: a
// retried batch re-runs every op from scratch against the rolled-back state,
// so they keep their results in fields they overwrite, never append to.
type op struct {
	prepare func(tx *bolt.Tx) error
	apply   func(tx *bolt.Tx) error
	done    chan error
	// accept marks ops that add new work; they are refused first when space
	// runs short so that accepted tasks can still record progress.
	accept bool
	// origin and charge are what an accept op adds to its origin's quota
	// (quota.go).
	origin Origin
	charge int64
	// queued, if set, is called once the op is in the commit loop's
	// queue: ops queued after it commit with it or after it.
	queued func()
}

// errSkip from prepare means the op is complete without writing (a
// duplicate accept); it is reported to the caller as success.
var errSkip = errors.New("nothing to write")

func (s *Spool) startLoop() {
	s.ops = make(chan *op, s.opts.MaxBatch)
	s.loopDone = make(chan struct{})
	go s.commitLoop(s.db, s.ops, s.loopDone)
}

// stopLoop ends the commit loop; callers hold s.mu exclusively, so no op is
// being submitted and every submitted op has been answered.
func (s *Spool) stopLoop() {
	close(s.ops)
	<-s.loopDone
}

// submit hands o to the commit loop and waits for its commit (fsync
// included) to end.
func (s *Spool) submit(o *op) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	o.done = make(chan error, 1)
	s.ops <- o
	if o.queued != nil {
		o.queued()
	}
	return <-o.done
}

// commitLoop is the group commit: it takes whatever ops are waiting when the
// previous commit ends (up to MaxBatch) and commits them in one transaction,
// so one fsync serves them all. Unlike bbolt's Batch it never waits for more
// ops to arrive: an idle spool commits a lone op at once.
func (s *Spool) commitLoop(db *bolt.DB, ops <-chan *op, done chan<- struct{}) {
	defer close(done)
	batch := make([]*op, 0, s.opts.MaxBatch)
	for first := range ops {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o, ok := <-ops:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.commit(db, batch)
	}
}

// commit runs batch in one transaction and answers every op.
func (s *Spool) commit(db *bolt.DB, batch []*op) {
	if s.opts.FailCommit != nil {
		if err := s.opts.FailCommit(); err != nil {
			cerr := commitError(s.path, err)
			for _, o := range batch {
				s.noteFailed(o, cerr)
				o.done <- cerr
			}
			return
		}
	}
	s.commitBatch(db, batch, s.lowSpace())
}

// commitBatch is commit without the failure injection. A batch whose
// commit runs out of room is run again one op at a time: together they may
// need more new pages than the end of the file has, while each alone fits
// in the reserve, so one ticket's big record cannot keep the others'
// progress from being written.
func (s *Spool) commitBatch(db *bolt.DB, batch []*op, lowSpace bool) {
	results := make([]error, len(batch))
	live := make([]bool, len(batch))
	refused := make([]bool, len(batch))
	for i := range live {
		live[i] = true
	}
	for {
		poisoned := -1
		err := db.Update(func(tx *bolt.Tx) error {
			if near, over := s.nearSoftCap(tx); near {
				// Printed tickets make room before new ones are refused;
				// the pages come free when this transaction commits.
				if _, _, err := s.reclaim(tx, "", over+s.lim.intake/10); err != nil {
					return err
				}
			}
			room := s.fileRoom(tx)
			for i, o := range batch {
				if !live[i] {
					continue
				}
				results[i], refused[i] = nil, false
				if err := o.prepare(tx); err != nil {
					// Duplicates are answered even when full: they add nothing.
					results[i] = err
					continue
				}
				if o.accept && lowSpace {
					results[i], refused[i] = fmt.Errorf("accept: %w: the disk has less than the spool's reserve and keep_free left", ErrFull), true
					continue
				}
				if o.accept {
					// Checked against the totals this transaction has
					// reached so far, so one batch cannot overshoot.
					err := s.overQuota(tx, o.origin, o.charge)
					var qe *QuotaError
					if errors.As(err, &qe) {
						// The door's own finished tickets make room first.
						if _, n, rerr := s.reclaim(tx, o.origin, qe.Used+qe.Need-qe.Quota); rerr != nil {
							return rerr
						} else if n > 0 {
							err = s.overQuota(tx, o.origin, o.charge)
						}
					}
					if err != nil {
						results[i] = fmt.Errorf("accept: %w", err)
						continue
					}
					// Decided on the file: the end of the file below
					// the intake limit, never the reserve.
					if !s.admit(&room, o.charge) {
						results[i], refused[i] = fmt.Errorf("accept: %w: the spool file has reached the size at which new tasks are refused (%s of its %s cap; the rest is kept for the progress of tickets already taken)", ErrFull, FormatSize(s.lim.intake), FormatSize(s.opts.MaxSize)), true
						continue
					}
				}
				if o.apply == nil {
					continue
				}
				if err := o.apply(tx); err != nil {
					results[i] = err
					poisoned = i
					return err
				}
			}
			return nil
		})
		if err == nil {
			break
		}
		if poisoned >= 0 {
			// Drop the op that failed and run the others again from scratch.
			live[poisoned] = false
			continue
		}
		cerr := commitError(s.path, err)
		if errors.Is(cerr, ErrFull) {
			var alone []*op
			for i, o := range batch {
				if live[i] {
					alone = append(alone, o)
				}
			}
			if len(alone) > 1 {
				// Progress first, then intake, each in its own
				// transaction.
				slices.SortStableFunc(alone, func(a, b *op) int { return cmpBool(a.accept, b.accept) })
				for i, o := range batch {
					if !live[i] {
						s.answer(o, results[i], refused[i])
					}
				}
				for _, o := range alone {
					s.commitBatch(db, []*op{o}, lowSpace)
				}
				return
			}
		}
		// The commit itself failed (disk full, I/O error): nothing in this
		// batch is on disk.
		for i := range batch {
			if live[i] {
				results[i] = cerr
				s.noteFailed(batch[i], cerr)
			}
		}
		break
	}
	for i, o := range batch {
		s.answer(o, results[i], refused[i])
	}
}

// answer tells o's submitter how it ended, noting a refusal for room.
func (s *Spool) answer(o *op, err error, refused bool) {
	if errors.Is(err, errSkip) {
		err = nil
	}
	if refused {
		s.noteRefused(true)
	}
	o.done <- err
}

// noteFailed notes a commit that failed: a refusal for an accept, a write
// that failed for the progress of accepted work.
func (s *Spool) noteFailed(o *op, err error) {
	if o.accept {
		if errors.Is(err, ErrFull) {
			s.noteRefused(false)
		}
		return
	}
	s.noteWriteFailed(err)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// commitError maps a failed commit to ErrFull when space ran out.
func commitError(path string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, berrors.ErrMaxSizeReached) || isDiskFull(err) {
		return fmt.Errorf("commit spool %s: %w: %v", path, ErrFull, err)
	}
	return fmt.Errorf("commit spool %s: %w", path, err)
}

// lowSpace reports whether the file system holding the spool has less than
// Reserve plus KeepFree bytes free.
func (s *Spool) lowSpace() bool {
	if s.opts.Reserve <= 0 || s.free == nil {
		return false
	}
	avail, err := s.free()
	return err == nil && avail < uint64(s.opts.Reserve+s.opts.KeepFree)
}
