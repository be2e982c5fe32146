package spool

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPreflightPrefetchesTheFile: opening a spool whose file is not in the
// page cache (after a reboot) asks the kernel to read it in ahead of
// bbolt's structure check, whose MADV_RANDOM page faults would read it 4 KiB
// at a time (docs/BENCHMARKS.md, "Slow store PC").
func TestPreflightPrefetchesTheFile(t *testing.T) {
	s, _ := openTest(t, Options{})
	// Some 4 MiB: 200 tickets of 20 KB.
	pad := make([]byte, 20<<10)
	for i := range 200 {
		nt := task(seqName(i), "kitchen")
		nt.Payload = append(nt.Payload, pad...)
		mustAccept(t, s, nt)
	}
	path := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, fi.Size(), unix.FADV_DONTNEED); err != nil {
		t.Skipf("cannot drop the file from the page cache here: %v", err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	resident := func() float64 {
		vec := make([]byte, (len(mem)+os.Getpagesize()-1)/os.Getpagesize())
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatalf("mincore: %v", e)
		}
		n := 0
		for _, v := range vec {
			n += int(v & 1)
		}
		return float64(n) / float64(len(vec))
	}
	if r := resident(); r > 0.5 {
		t.Skipf("%.0f%% of the file stays cached after FADV_DONTNEED (tmpfs?): nothing to measure", 100*r)
	}
	if err := preflight(path); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for resident() < 0.9 {
		if time.Now().After(deadline) {
			t.Fatalf("%.0f%% of the %d KiB spool file in the page cache 5 s after preflight, want it read ahead (at least 90%%)", 100*resident(), fi.Size()>>10)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
