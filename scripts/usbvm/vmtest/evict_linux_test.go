package vmtest

import (
	"os"

	"golang.org/x/sys/unix"
)

// fadviseDontNeed asks the kernel to drop f's cached pages.
func fadviseDontNeed(f *os.File) error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
