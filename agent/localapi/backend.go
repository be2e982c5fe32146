package localapi

import (
	"context"

	"printgate/agent/api"
	"printgate/spool"
)

// Backend is what the HTTP API needs from the agent. Errors are classified
// with errors.Is against the spool sentinels (ErrInvalid, ErrTooLarge,
// ErrFull, ErrNotFound, ErrPruned, ErrIllegalTransition, ErrClosed) and the
// agent's own in package api; the backend wraps them with context.
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
	Printers() []api.PrinterInfo
	// Health summarises the agent for /healthz.
	Health() api.Health
}
