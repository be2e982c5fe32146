package localapi

import (
	"context"
	"errors"
	"time"

	"printgate/spool"
)

// Backend is what the HTTP API needs from the agent. Errors are classified
// with errors.Is against the spool sentinels (ErrInvalid, ErrTooLarge,
// ErrFull, ErrNotFound, ErrPruned, ErrIllegalTransition, ErrClosed) and the
// ones below; the backend wraps them with context.
type Backend interface {
	// Submit accepts t (already decoded and checked for shape) and returns
	// only once it is durable. A task_no already known returns the stored
	// task with duplicate=true, before any other check. Otherwise a t with
	// Invalid set (this door's refusal) is refused with an error wrapping
	// Invalid, and a printer not in the config is ErrUnknownPrinter.
	Submit(ctx context.Context, t spool.NewTask) (task *spool.Task, duplicate bool, err error)
	// Task returns one task, or an error wrapping spool.ErrNotFound.
	Task(taskNo string) (*spool.Task, error)
	// Tasks returns one page of tasks, filtered as o says.
	Tasks(o spool.ListOptions) (spool.Page, error)
	// Reprint accepts a new version of taskNo (origin manager or local, as
	// the agent decides) and returns it.
	Reprint(ctx context.Context, taskNo string) (*spool.Task, error)
	// Cancel cancels taskNo and returns it as stored after the change; a task
	// already SENDING or finished is ErrConflict.
	Cancel(ctx context.Context, taskNo string) (*spool.Task, error)
	// Printers describes every configured printer.
	Printers() []PrinterInfo
	// Health summarises the agent for /healthz.
	Health() Health
}

// PrinterInfo is one configured printer as GET /api/v1/printers shows it.
type PrinterInfo struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// State is one of READY, BUSY, PAPER_OUT, COVER_OPEN, OFFLINE, ERROR.
	State string `json:"state"`
	// Queue counts the tasks waiting in this printer's lane.
	Queue int `json:"queue"`
	// FailoverTo names the backup currently printing this printer's work,
	// empty when the printer prints its own.
	FailoverTo string `json:"failover_to"`
	// Since is when the printer entered State.
	Since time.Time `json:"since,omitzero"`
	// RawPort is the address of the printer's raw port (raw_listen), where
	// a POS prints as to a port-9100 printer; empty when it has none open.
	RawPort string `json:"raw_port,omitempty"`
}

// Health is the agent's summary for GET /healthz.
type Health struct {
	// Status is "ok" while the agent serves; empty means "ok".
	Status string `json:"status"`
	// Link is the cloud link: online, offline, unpaired or disabled.
	Link string `json:"link"`
	// Outbox counts events not yet acknowledged by the cloud.
	Outbox int `json:"outbox"`
	// OutboxDropped counts events dropped by the outbox cap before the
	// cloud acknowledged them: history the cloud will never see.
	OutboxDropped int `json:"outbox_dropped"`
	// SpoolQuarantined names the corrupt spool file moved aside at start,
	// when there was one; UnreadableRecords counts what of it could not be
	// salvaged. Either makes Status "degraded".
	SpoolQuarantined  string `json:"spool_quarantined,omitempty"`
	UnreadableRecords int    `json:"unreadable_records,omitempty"`
	// SpoolUsedPercent is how full the spool is against the size at which
	// new tasks are refused (0 without a size cap); from
	// SpoolNearlyFullPercent on, Status is "degraded".
	SpoolUsedPercent int `json:"spool_used_percent,omitempty"`
	// Error says why Status is "failed" (the core stopped) or "degraded".
	Error string `json:"error,omitempty"`
}

// Errors a Backend wraps so the API can answer with the right status.
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
)
