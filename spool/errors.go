package spool

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors callers branch on.
var (
	// ErrFull means the spool cannot take more work: the disk is full or the
	// configured maximum size is reached. Nothing already accepted is affected;
	// accepting works again once space returns (after Prune and Compact, or
	// after the disk is cleaned up).
	ErrFull = errors.New("spool full")
	// ErrIllegalTransition means the requested state change is not in the state
	// table; the task was left as it was.
	ErrIllegalTransition = errors.New("illegal state transition")
	// ErrStateChanged means a compare-and-set transition found the task in a
	// state other than the one the caller expected: someone else moved it.
	// Nothing was changed; the caller re-reads the task and decides again.
	ErrStateChanged = errors.New("task state changed")
	// ErrCorruptRecord means a stored task record cannot be decoded (or an
	// index names a task that is not there). Only that task is affected;
	// Quarantine records it as FAILED with reason CORRUPT_RECORD.
	ErrCorruptRecord = errors.New("corrupt task record")
	// ErrNotFound means no task with that task_no is known.
	ErrNotFound = errors.New("task not found")
	// ErrInvalid wraps every validation failure of a submitted task; the
	// wrapping error says which field is wrong and why.
	ErrInvalid = errors.New("invalid task")
	// ErrTooLarge means the task body exceeds the configured size limit.
	ErrTooLarge = errors.New("task too large")
	// ErrLocked means another process (usually another printgate) holds the
	// spool file open.
	ErrLocked = errors.New("spool in use by another process")
	// ErrSchemaTooNew means the file was written by a newer printgate whose
	// schema this build does not understand; it is left untouched.
	ErrSchemaTooNew = errors.New("spool schema newer than this printgate")
	// ErrClosed means the spool was closed.
	ErrClosed = errors.New("spool closed")
	// ErrPruned means the task's body was dropped by retention; only its
	// dedupe tombstone remains.
	ErrPruned = errors.New("task body pruned by retention")
	// ErrReclaimed is an ErrPruned whose body went before its retention
	// ran out: the spool, or its door's quota, needed the room for new
	// tickets and it had printed (or ended long enough ago).
	ErrReclaimed = fmt.Errorf("task body dropped early to make room for new tickets: %w", ErrPruned)
)

// CorruptError reports that the spool file could not be used: it was moved
// aside, a new spool was started in its place, and every task that could be
// read from the old file was salvaged into it (state, timeline, flags and
// dedupe; tasks found SENDING re-armed as outcome unknown). The agent shows
// it loudly: tasks in records that could not be read were not printed by
// this run, and their task_no would be accepted again.
type CorruptError struct {
	Path    string    // the spool path that was unusable
	MovedTo string    // where the unusable file now is
	At      time.Time // when it was moved
	Err     error     // why it was unusable

	// Salvaged counts the tasks carried into the new spool, dedupe
	// tombstones of pruned tasks included.
	Salvaged int
	// Active counts the salvaged tasks still to print (non-terminal).
	Active int
	// Rearmed counts the salvaged tasks found SENDING and moved to UNKNOWN:
	// nobody knows whether their paper came out.
	Rearmed int
	// Suspect counts salvaged non-terminal tasks whose record was provably
	// older than their outbox events showed (their latest record was
	// unreadable). Every salvaged non-terminal task is marked a possible
	// duplicate, since without such evidence a record may still be stale.
	Suspect int
	// Unreadable counts pages of the old file's tree and records in them
	// that could not be read; the tasks they held are lost.
	Unreadable int
	// SalvageErr is set when the salvage itself failed; the new spool is
	// then empty and the counts above are zero (Unreadable aside).
	SalvageErr error
}

// Error describes what happened and what the operator should know.
func (e *CorruptError) Error() string {
	head := fmt.Sprintf("spool %s was unreadable (%v): moved it to %s", e.Path, e.Err, e.MovedTo)
	if e.SalvageErr != nil {
		return fmt.Sprintf("%s and started an empty spool, salvage failed (%v); tasks in the old file were not printed", head, e.SalvageErr)
	}
	msg := fmt.Sprintf("%s and started a new spool with the %d tasks salvaged from it (%d still to print, each marked a possible duplicate, %d of them re-armed as outcome unknown, %d with evidence of lost progress)", head, e.Salvaged, e.Active, e.Rearmed, e.Suspect)
	switch {
	case e.Unreadable > 0:
		msg += fmt.Sprintf("; %d pages or records could not be read: tasks in them were not printed and their task_no would be accepted again", e.Unreadable)
	case e.Salvaged == 0:
		msg += "; nothing in it could be read: tasks in the old file were not printed"
	}
	return msg
}

// Unwrap exposes the underlying cause.
func (e *CorruptError) Unwrap() error { return e.Err }
