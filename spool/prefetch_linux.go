package spool

import (
	"os"

	"golang.org/x/sys/unix"
)

// prefetchMax bounds the read-ahead: a spool near the 1 GiB cap on a PC
// with little memory would only evict itself.
const prefetchMax = 256 << 20

// prefetch asks the kernel to read the spool file into the page cache in
// large requests before bbolt's structure check walks it. bbolt maps the
// file with MADV_RANDOM, so after a reboot the check faults every 4 KiB
// page in with a read of its own: on a disk that does ~100 requests a
// second (a store PC's spinning disk) 20,000 spooled tickets took two
// minutes to open (docs/BENCHMARKS.md, "Slow store PC"). Advisory: an
// error only loses the speed-up.
func prefetch(f *os.File, size int64) {
	_ = unix.Fadvise(int(f.Fd()), 0, min(size, prefetchMax), unix.FADV_WILLNEED)
}
