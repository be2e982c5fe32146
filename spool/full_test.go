package spool

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fillUntilFull accepts tasks with bodies of size n until Accept fails, and
// returns the accepted task_nos and the error that stopped it.
func fillUntilFull(t *testing.T, s *Spool, prefix string, n int) ([]string, error) {
	t.Helper()
	var ok []string
	for i := 0; i < 100000; i++ {
		nt := task(prefix+seqName(i), "k")
		nt.Payload = make([]byte, n)
		for j := range nt.Payload {
			nt.Payload[j] = byte(i + j)
		}
		if _, _, err := s.Accept(nt); err != nil {
			return ok, err
		}
		ok = append(ok, nt.TaskNo)
	}
	t.Fatal("spool never filled up")
	return nil, nil
}

// checkIntact asserts every accepted task is present with its body and can
// still make progress to PRINTED.
func checkIntact(t *testing.T, s *Spool, accepted []string, n int) {
	t.Helper()
	for _, no := range accepted {
		got, err := s.Get(no)
		if err != nil || len(got.Payload) != n {
			t.Fatalf("accepted task %s damaged: %v", no, err)
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestMaxSizeRefusesNewWorkOnly ensures that at the configured maximum size
// Accept returns ErrFull while every accepted task is intact and can still
// record its progress, and that accepting works again once space is freed.
func TestMaxSizeRefusesNewWorkOnly(t *testing.T) {
	s, clk := openTest(t, Options{MaxSize: 2 << 20, Reserve: 512 << 10, MaxTaskBytes: 64 << 10, Retention: time.Hour})
	accepted, err := fillUntilFull(t, s, "", 8<<10)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("filling stopped with %v, want ErrFull", err)
	}
	if len(accepted) < 50 {
		t.Fatalf("only %d tasks fit in 2 MiB", len(accepted))
	}
	checkIntact(t, s, accepted, 8<<10)
	if _, dup, err := s.Accept(task(accepted[0], "k")); err != nil || !dup {
		t.Errorf("duplicate while full: dup=%v err=%v, want a duplicate answer", dup, err)
	}
	for _, no := range accepted {
		mustMove(t, s, no, StateQueued, Change{})
		mustMove(t, s, no, StateSending, Change{})
		mustMove(t, s, no, StatePrinted, Change{Confirmation: ConfirmPrinted})
	}
	evs, _ := s.ReadOutbox(1 << 20)
	keys := make([][]byte, len(evs))
	for i, e := range evs {
		keys[i] = e.Key
	}
	if err := s.AckOutbox(keys); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	if _, err := s.Prune(clk.Now()); err != nil {
		t.Fatal(err)
	}
	// Intake is decided on the file (room.go): the pages the prune freed
	// take a new task only where they lie in a run long enough, which
	// depends on how the commits fell, so a refusal here is answered as the
	// agent answers it, by compacting (PROTOCOL §2 Room at the cap).
	if _, _, err := s.Accept(task("AFTER_PRUNE_v1", "k")); err != nil {
		if !errors.Is(err, ErrFull) {
			t.Fatalf("accept after the prune: %v", err)
		}
		if _, err := s.Compact(); err != nil {
			t.Fatal(err)
		}
		mustAccept(t, s, task("AFTER_PRUNE_v1", "k"))
	}
}

// TestMaxSizeHardLimit ensures bbolt's own size limit, reached with no
// reserve, surfaces as ErrFull and damages nothing.
func TestMaxSizeHardLimit(t *testing.T) {
	s, _ := openTest(t, Options{MaxSize: 1 << 20, Reserve: -1})
	accepted, err := fillUntilFull(t, s, "", 16<<10)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("filling stopped with %v, want ErrFull", err)
	}
	checkIntact(t, s, accepted, 16<<10)
	if fi, _ := os.Stat(s.Path()); fi.Size() > 1<<20 {
		t.Errorf("file grew to %d bytes past the 1 MiB cap", fi.Size())
	}
}

// TestDiskFullTmpfs fills a real 4 MiB tmpfs: first with the reserve in
// force (Accept refuses while transitions still fit), then with no reserve
// until the kernel says ENOSPC. Nothing accepted is damaged, the file reopens
// cleanly, and accepting works again once space is freed. It needs root to
// mount tmpfs (CI runs as root) and skips elsewhere.
func TestDiskFullTmpfs(t *testing.T) {
	dir := mountTmpfs(t, "4m")
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spool.db")

	s, err := Open(path, Options{Reserve: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := fillUntilFull(t, s, "R", 8<<10)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("with reserve: stopped with %v, want ErrFull", err)
	}
	for _, no := range accepted {
		mustMove(t, s, no, StateQueued, Change{})
	}
	checkIntact(t, s, accepted, 8<<10)
	s.Close()

	s, err = Open(path, Options{Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	more, err := fillUntilFull(t, s, "X", 8<<10)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("without reserve: stopped with %v, want ErrFull", err)
	}
	t.Logf("without reserve: %d more accepted, then: %v", len(more), err)
	accepted = append(accepted, more...)
	checkIntact(t, s, accepted, 8<<10)
	s.Close()

	s, err = Open(path, Options{Reserve: -1})
	if err != nil {
		t.Fatalf("reopen after ENOSPC: %v", err)
	}
	if s.Recovered() != nil {
		t.Fatalf("full disk made the spool look corrupt: %v", s.Recovered())
	}
	checkIntact(t, s, accepted, 8<<10)
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	mustAccept(t, s, task("AFTER_SPACE_v1", "k"))
}

// TestFailCommitInjection ensures the failure injection point fails every
// operation of a commit with ErrFull (for an ENOSPC) and writes nothing, and
// that the spool works normally once it stops failing.
func TestFailCommitInjection(t *testing.T) {
	var fail atomic.Bool
	s, _ := openTest(t, Options{FailCommit: func() error {
		if fail.Load() {
			return syscall.ENOSPC
		}
		return nil
	}})
	mustAccept(t, s, task("A_v1", "k"))
	fail.Store(true)
	if _, _, err := s.Accept(task("B_v1", "k")); !errors.Is(err, ErrFull) {
		t.Errorf("accept while failing: %v", err)
	}
	if _, err := s.Transition("A_v1", StateAccepted, StateQueued, Change{}); !errors.Is(err, ErrFull) {
		t.Errorf("transition while failing: %v", err)
	}
	fail.Store(false)
	if _, err := s.Get("B_v1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("failed accept was written: %v", err)
	}
	if a, _ := s.Get("A_v1"); a.State != StateAccepted {
		t.Errorf("failed transition was written: %s", a.State)
	}
	mustMove(t, s, "A_v1", StateQueued, Change{})
}
