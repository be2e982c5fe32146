//go:build !windows

package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// dirLock is an exclusive lock on a file in the data dir, held while the
// engine runs there: two engines on one store directory would corrupt it.
// The kernel drops it when the process dies, SIGKILL included, so a
// crashed hub leaves no stale lock.
type dirLock struct{ f *os.File }

func lockDir(path string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("store: %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() { l.f.Close() }
