package spool

import (
	"fmt"
	"io"
	"os"
)

// warmLimit is how much of the spool file warmCache reads; a variable so
// the cold-open benchmark can run without it for its baseline.
var warmLimit int64 = 256 << 20

// warmCache reads the spool file front to back before bbolt maps it. The
// structure check and the restore then touch every page through the
// mapping, which bbolt marks for random access: on a cold cache (a store PC
// just rebooted) each 4 KiB page was its own disk read, 12,000 of them for
// 20,000 spooled tickets. On a spinning disk at ~100 reads a second that
// kept the first ticket waiting two minutes (docs/BENCHMARKS.md, "Slow
// store PC"); one sequential read of the same bytes takes a fraction of a
// second there. It costs no memory the check would not use anyway, reads
// at most warmLimit, and an error here only means bbolt reads the pages
// itself, as before.
func warmCache(path string) error {
	if warmLimit <= 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil // bolt.Open creates the file, or says why not
	}
	defer f.Close()
	// Large reads of our own: io.Discard would read in 8 KiB pieces.
	buf := make([]byte, 1<<20)
	for read := int64(0); read < warmLimit; {
		n, err := f.Read(buf)
		read += int64(n)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read spool %s ahead: %w", path, err)
		}
	}
	return nil
}
