//go:build unix

package spool

import (
	"errors"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// diskFree reports the bytes available to this process on the spool's file
// system.
type diskFree func() (uint64, error)

func newDiskFree(path string) diskFree {
	dir := filepath.Dir(path)
	return func() (uint64, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return 0, err
		}
		return st.Bavail * uint64(st.Bsize), nil
	}
}

// diskSpace reports the bytes available to this process and the total
// size of the file system holding dir.
func diskSpace(dir string) (avail, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
