package spool

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestOpenCorruptFileClosesIt ensures that a damaged file bbolt panics on
// (here: truncated, a bad freelist) is closed before it is moved aside: no
// descriptor of this process still points at the moved file (the leak is the same on Linux until the GC runs the
// file's finalizer). On Windows the same leaked handle made the move itself fail
// (TestOpenCorruptFile/truncated under Wine).
func TestOpenCorruptFileClosesIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		nt := task(seqName(i), "k")
		nt.Payload = make([]byte, 200)
		mustAccept(t, s, nt)
	}
	s.Close()
	// No GC while it runs: the leaked *os.File's finalizer would close it
	// and hide the leak (as it cannot on Windows, where the move comes first).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	fi, _ := os.Stat(path)
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("open damaged: %v", err)
	}
	defer s.Close()
	if s.Recovered() == nil {
		t.Fatal("the truncated spool was not moved aside")
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, path+".corrupt-") {
			t.Fatalf("fd %s still open on the moved-aside file %s", fd.Name(), target)
		}
	}
}
