package spool

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// evictFile drops path's pages from the page cache (that file only, not
// the machine's cache), as a reboot leaves it.
func evictFile(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		tb.Fatal(err)
	}
}

// residentPages counts how many of path's pages are in the page cache.
func residentPages(tb testing.TB, path string) (resident, total int) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		tb.Fatal(err)
	}
	defer unix.Munmap(m)
	pages := (len(m) + os.Getpagesize() - 1) / os.Getpagesize()
	vec := make([]byte, pages)
	// x/sys/unix has no Mincore wrapper.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		tb.Fatal(errno)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, pages
}

// fillSpool accepts n document tasks into a spool at path and closes it.
func fillSpool(tb testing.TB, path string, n int) {
	tb.Helper()
	sp, err := Open(path, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	doc := []byte(`{"lines":[{"text":"TABLE 12","size":"2x2"},{"text":"Kung pao chicken","right":"x2"},{"text":"Fried rice, no egg","right":"x1"},{"cut":"partial"}]}`)
	for i := 0; i < n; i++ {
		if _, _, err := sp.Accept(NewTask{TaskNo: fmt.Sprintf("T%06d_v1", i), Printer: "k", Document: doc, Timeout: 24 * time.Hour}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := sp.Close(); err != nil {
		tb.Fatal(err)
	}
}

// TestOpenReadsTheFileAhead ensures Open brings the whole spool file into
// the page cache with one sequential read before bbolt's check walks it
// page by page: after a cold start every page is resident, not only those
// the check happened to fault in.
func TestOpenReadsTheFileAhead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	fillSpool(t, path, 500)
	evictFile(t, path)
	if r, n := residentPages(t, path); r == n {
		t.Skipf("the page cache kept all %d pages after FADV_DONTNEED: this file system cannot show a cold open", n)
	}
	sp, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if r, n := residentPages(t, path); r < n {
		t.Errorf("after Open %d of the file's %d pages are in the page cache, want all: the file was not read ahead", r, n)
	}
}

// BenchmarkOpenCold opens a spool of 20,000 tasks (48 MiB) with its pages
// evicted from the page cache, as after a reboot, with the read-ahead
// (warm) and without it (mapped): docs/BENCHMARKS.md records the ratio.
func BenchmarkOpenCold(b *testing.B) {
	path := filepath.Join(b.TempDir(), "spool.db")
	fillSpool(b, path, 20000)
	for _, mode := range []struct {
		name  string
		limit int64
	}{{"mapped", 0}, {"warm", warmLimit}} {
		b.Run(mode.name, func(b *testing.B) {
			old := warmLimit
			warmLimit = mode.limit
			defer func() { warmLimit = old }()
			for b.Loop() {
				b.StopTimer()
				evictFile(b, path)
				b.StartTimer()
				sp, err := Open(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				sp.Close()
				b.StartTimer()
			}
		})
	}
}
