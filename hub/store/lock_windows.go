package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// dirLock is an exclusive lock on a file in the data dir, held while the
// engine runs there: two engines on one store directory would corrupt it.
// Windows drops it when the process dies.
type dirLock struct{ f *os.File }

func lockDir(path string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err != nil {
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, fmt.Errorf("store: %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() { l.f.Close() }
