package store

import "errors"

// Errors callers branch on.
var (
	// ErrLocked means another process has the data dir open (a running
	// hub, or a command run beside it).
	ErrLocked = errors.New("the data dir is in use by another printgate-hub process")
	// ErrNotFound means no such tenant, store, key, device or job.
	ErrNotFound = errors.New("not found")
	// ErrExists means the id is taken (a tenant or store added twice).
	ErrExists = errors.New("already exists")
	// ErrDuplicate means the task_no is already stored for the store; the
	// caller answers with the stored job's state.
	ErrDuplicate = errors.New("task_no already stored")
	// ErrFull means a bucket reached its byte limit: the write was
	// refused and nothing stored was dropped.
	ErrFull = errors.New("the hub's storage limit is reached")
	// ErrRevoked means the device token or API key was revoked.
	ErrRevoked = errors.New("revoked")
)
