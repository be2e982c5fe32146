package api

import "errors"

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
	// ErrBadPayload means a raw payload cannot reach a printer as sent
	// (400 bad_payload): it ends inside a command, whose missing bytes the
	// printer would take from whatever follows (DESIGN.md invariant 9). The
	// wrapping error names the command and its offset.
	ErrBadPayload = errors.New("bad payload")
)

// ErrConfigRefused wraps the errors of a config a reload refused: the
// running config stays in force.
var ErrConfigRefused = errors.New("config refused; the running config is kept")
