package cloudtest

import "errors"

// Errors the Go API returns (wrapped with context); the test API maps them
// to HTTP statuses.
var (
	// ErrNotConnected: the agent has no connection that finished its hello,
	// so a command cannot be sent now. Commands are not queued: a real
	// cloud tells support the store is offline.
	ErrNotConnected = errors.New("agent not connected")
	// ErrQueueFull: the agent already has Options.MaxQueuedJobs jobs that
	// it has not acknowledged.
	ErrQueueFull = errors.New("job queue full")
	// ErrNotCommand: Send was given a message that is not a command the
	// cloud sends (reprint, cancel, logs_tail, logs_stop).
	ErrNotCommand = errors.New("not a command")
	// ErrUnknownUserCode: no device authorization has that user code (never
	// issued, already used, or forgotten long after it expired).
	ErrUnknownUserCode = errors.New("unknown user code")
	// ErrExpired: the device authorization expired before it was decided.
	ErrExpired = errors.New("device code expired")
	// ErrDecided: the device authorization was already approved or denied.
	ErrDecided = errors.New("device code already decided")
	// ErrClosed: the Cloud was closed.
	ErrClosed = errors.New("cloud closed")
)
