//go:build windows

package spool

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// diskFree reports the bytes available to this process on the spool's volume.
type diskFree func() (uint64, error)

func newDiskFree(path string) diskFree {
	dir := filepath.Dir(path)
	return func() (uint64, error) {
		p, err := windows.UTF16PtrFromString(dir)
		if err != nil {
			return 0, err
		}
		var avail, total, free uint64
		if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
			return 0, err
		}
		return avail, nil
	}
}

// diskSpace reports the bytes available to this process and the total
// size of the volume holding dir.
func diskSpace(dir string) (avail, total uint64, err error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, 0, err
	}
	var free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, 0, err
	}
	return avail, total, nil
}

func isDiskFull(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}
