package api

import (
	"errors"
	"fmt"
	"time"
)

// Errors the agent wraps so that every door (the local API, the page, the
// cloud link) can answer with the right status or code.
var (
	// ErrUnknownPrinter means the task names a printer that is not in the
	// config (404 unknown_printer).
	ErrUnknownPrinter = errors.New("unknown printer")
	// ErrConflict means the action does not fit the task's state, e.g.
	// cancelling a task that is already SENDING or finished (409).
	ErrConflict = errors.New("conflict with task state")
	// ErrUnavailable means the agent cannot take the task now: it is still
	// restoring its spool, or its core has stopped (503, Retry-After).
	ErrUnavailable = errors.New("agent unavailable")
	// ErrBadDocument means the ticket document cannot be printed as
	// asked on its printer (400 bad_document); the wrapping error names the
	// line and says why, e.g. characters the printer's encoding lacks.
	ErrBadDocument = errors.New("bad document")
	// ErrStoredNotPrinting means the task is on disk but the core that
	// prints it stopped before it could (503 stored_not_printing,
	// Retry-After): it prints after the agent restarts, so a submitter
	// resends the same task_no (answered as its duplicate), never a new
	// one. It wraps ErrUnavailable, so a door that knows only that still
	// asks for a resend.
	ErrStoredNotPrinting = fmt.Errorf("task stored, but not printing until the agent restarts: %w", ErrUnavailable)
	// ErrBadPayload means a raw payload cannot reach a printer as sent
	// (400 bad_payload): it ends inside a command, whose missing bytes the
	// printer would take from whatever follows (docs/DESIGN.md, invariant 9). The
	// wrapping error names the command and its offset.
	ErrBadPayload = errors.New("bad payload")
)

// ErrTaskNoTaken means a task_no already known names another ticket: the
// stored task is for another printer or has other content, so the request
// is no duplicate of it and is not answered as one (409
// task_no_other_printer or task_no_other_content; docs/DESIGN.md, invariant 12).
var ErrTaskNoTaken = errors.New("task_no already names another ticket")

// TaskNoTaken is the refusal of one task whose task_no is known for another
// ticket. It names what differs and matches ErrTaskNoTaken.
type TaskNoTaken struct {
	TaskNo string
	// Printer is set when the printers differ: the stored task's printer,
	// and Sent the one the request named.
	Printer, Sent string
	// Content is set when the bodies differ (sha256 of payload or document).
	Content bool
	// Origin is the door the stored task came through.
	Origin string
}

// Code is the error code of the refusal: the printer first, when both differ.
func (e *TaskNoTaken) Code() string {
	if e.Printer != "" {
		return CodeTaskNoOtherPrinter
	}
	return CodeTaskNoOtherContent
}

// Error names the task_no, what differs and what to do.
func (e *TaskNoTaken) Error() string {
	var what string
	switch {
	case e.Printer != "" && e.Content:
		what = fmt.Sprintf("for printer %q with other content (this request: printer %q)", e.Printer, e.Sent)
	case e.Printer != "":
		what = fmt.Sprintf("for printer %q (this request: printer %q)", e.Printer, e.Sent)
	default:
		what = "with other content (its sha256 differs)"
	}
	return fmt.Sprintf("task_no %s is already taken by another ticket, sent through the %s door %s; nothing was printed for this request: it is no duplicate of that ticket. Send this ticket under a new task_no", e.TaskNo, e.Origin, what)
}

// Unwrap makes errors.Is(err, ErrTaskNoTaken) hold.
func (e *TaskNoTaken) Unwrap() error { return ErrTaskNoTaken }

// ErrNotCloudTask refuses a cloud cancel of a task another door submitted
// (command_result not_cloud_task): the cloud may cancel its own tasks, and
// every task only when [cloud] cancel_tasks = "any".
var ErrNotCloudTask = errors.New("not a cloud task")

// ErrConfigRefused wraps the errors of a config a reload refused: the
// running config stays in force.
var ErrConfigRefused = errors.New("config refused; the running config is kept")

// StoredNotPrinting is the error of one task stored in the moment its core
// stopped: it names the task (for a reprint or retry, the new version) and
// matches ErrStoredNotPrinting and ErrUnavailable.
type StoredNotPrinting struct {
	TaskNo string // the stored task
	State  string // its stored state
}

// Error says the task is stored and how to resend it.
func (e *StoredNotPrinting) Error() string {
	return fmt.Sprintf("task %s is stored (%s) and prints after the restart; resend the same task_no, never a new one", e.TaskNo, e.State)
}

// Unwrap makes errors.Is(err, ErrStoredNotPrinting) hold.
func (e *StoredNotPrinting) Unwrap() error { return ErrStoredNotPrinting }

// RetryExists refuses a retry of a finished task while an earlier version
// of it (a retry or reprint) is still to print or has printed: a second
// one would put the ticket on paper twice. It names that version, so the
// page can show it, and matches ErrConflict (409).
type RetryExists struct {
	TaskNo  string // the task asked to be retried
	Version string // its version that prints or printed
	State   string // that version's state
}

// Error names the version that prints, for the page and the log.
func (e *RetryExists) Error() string {
	return fmt.Sprintf("task %s already has version %s (%s); follow that one, and retry it if it fails", e.TaskNo, e.Version, e.State)
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *RetryExists) Unwrap() error { return ErrConflict }

// ErrRateLimited means a door took more tasks per second than its [spool]
// rate_* allows (429 too_many_requests with Retry-After; no job_ack, so
// the cloud resends). It wraps ErrUnavailable: nothing was taken, and a
// resend later is answered.
var ErrRateLimited = fmt.Errorf("intake rate limit: %w", ErrUnavailable)

// RateLimited is the refusal of one task over its door's rate: it names the
// door, the config key that sets the rate and when a token is free again.
type RateLimited struct {
	Door  string  // api, cloud, raw or reprint
	Key   string  // the [spool] key: rate_api ...
	Rate  float64 // tasks per second
	Burst float64 // tasks at once
	// RetryAfter is how long until the door takes a task again.
	RetryAfter time.Duration
}

// Error says which door is over which rate and what changes it.
func (e *RateLimited) Error() string {
	return fmt.Sprintf("the %s door takes at most %g new tasks per second (burst %g) and this one came too soon: retry in %s; [spool] %s sets the rate", e.Door, e.Rate, e.Burst, e.RetryAfter.Round(time.Millisecond), e.Key)
}

// Unwrap makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimited) Unwrap() error { return ErrRateLimited }
