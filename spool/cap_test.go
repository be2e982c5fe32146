package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// capSizes are the caps the jam was measured at: the sequences below must
// hold at each.
var capSizes = []int64{16 << 20, 32 << 20, 128 << 20}

// skipLargeInShort skips the largest cap under -short and the race
// detector: filling 128 MiB with fsync'd commits takes tens of seconds,
// minutes under the race detector.
func skipLargeInShort(t *testing.T, capBytes int64) {
	if (testing.Short() || raceEnabled) && capBytes > 32<<20 {
		t.Skip("the 128 MiB cap is filled without -short and -race only")
	}
}

// fillWaiting accepts tasks of origin o with bodies of n bytes and moves
// each to QUEUED (its lane waits for paper), until Accept refuses one; it
// returns the waiting task_nos and the refusal. reprint, when set, also
// accepts a reprint of every task (origin manager, urgent), as the cloud's
// reprint command does.
func fillWaiting(t *testing.T, s *Spool, prefix string, o Origin, n int, reprint Origin) ([]string, error) {
	t.Helper()
	var waiting []string
	for i := 0; i < 100000; i++ {
		no := fmt.Sprintf("%s%05d", prefix, i)
		nt := originTask(no, o, n)
		nt.Timeout = time.Hour
		if _, _, err := s.Accept(nt); err != nil {
			return waiting, err
		}
		waiting = append(waiting, no)
		if _, err := s.Transition(no, StateAccepted, StateQueued, Change{}); err != nil {
			t.Fatalf("%s to QUEUED after %d waiting: %v", no, len(waiting), err)
		}
		compactIfFragmented(t, s)
		if reprint == "" {
			continue
		}
		rp := originTask(no+"_v2", reprint, n)
		rp.ReprintOf, rp.Priority, rp.Timeout = no, PriorityUrgent, time.Hour
		if _, _, err := s.Accept(rp); err != nil {
			return waiting, err
		}
		waiting = append(waiting, rp.TaskNo)
		if _, err := s.Transition(rp.TaskNo, StateAccepted, StateQueued, Change{}); err != nil {
			t.Fatalf("%s to QUEUED after %d waiting: %v", rp.TaskNo, len(waiting), err)
		}
	}
	t.Fatal("spool never filled up")
	return nil, nil
}

// compactIfFragmented compacts as the agent's maintenance does
// (agent.Maintain) when the spool asks for it.
func compactIfFragmented(t *testing.T, s *Spool) {
	t.Helper()
	if s.Fragmented() {
		if _, err := s.Compact(); err != nil {
			t.Fatalf("compact: %v", err)
		}
	}
}

// printWaiting prints every waiting task (the paper came back): each must
// reach PRINTED, none may be refused for room.
func printWaiting(t *testing.T, s *Spool, waiting []string) {
	t.Helper()
	for i, no := range waiting {
		if _, err := s.TransitionPath(no, StateQueued, []State{StateSending}, Change{}); err != nil {
			t.Fatalf("ticket %d of %d waiting could not start printing: %v", i+1, len(waiting), err)
		}
		if _, err := s.Transition(no, StateSending, StatePrinted, Change{Confirmation: ConfirmPrinted}); err != nil {
			t.Fatalf("ticket %d of %d waiting printed but its outcome was not recorded: %v", i+1, len(waiting), err)
		}
	}
}

// fileSize is the size of the spool's file on disk.
func fileSize(t *testing.T, s *Spool) int64 {
	t.Helper()
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestCapReachedThenPaperBack is the POS's sequence: the printer is out of
// paper, tickets wait until the spool refuses new ones; intake must stop
// near the cap (not at half of it because bbolt could not grow), and once
// the paper is back every waiting ticket prints.
func TestCapReachedThenPaperBack(t *testing.T) {
	for _, capBytes := range capSizes {
		t.Run(FormatSize(capBytes), func(t *testing.T) {
			skipLargeInShort(t, capBytes)
			s, _ := openTest(t, Options{MaxSize: capBytes})
			waiting, err := fillWaiting(t, s, "POS", OriginLocal, int(capBytes/256), "")
			if !errors.Is(err, ErrFull) {
				t.Fatalf("filling stopped with %v, want ErrFull", err)
			}
			u, err := s.Usage()
			if err != nil {
				t.Fatal(err)
			}
			size := fileSize(t, s)
			t.Logf("cap %s: accepts stopped at %d%% of the cap (live %d%%), file %d%%, %d waiting",
				FormatSize(capBytes), u.File*100/capBytes, u.Live*100/capBytes, size*100/capBytes, len(waiting))
			if u.File < u.Cap-2*Charge(s.MaxTaskBytes()) {
				t.Errorf("accepts stopped at %d%% of the cap, below its intake limit %d%%", u.File*100/capBytes, u.Cap*100/capBytes)
			}
			if size > capBytes {
				t.Errorf("file %d bytes, over the cap %d: intake alone may not pass it", size, capBytes)
			}
			printWaiting(t, s, waiting)
		})
	}
}

// TestCloudRepintsFillThenRestart is the malicious cloud's sequence: 1 MiB
// cloud jobs and a reprint of each while the printer waits for paper, then
// a restart with the file at the cap. The cap must hold across the
// restart, and once the paper is back every waiting ticket prints.
func TestCloudReprintsFillThenRestart(t *testing.T) {
	for _, capBytes := range capSizes {
		t.Run(FormatSize(capBytes), func(t *testing.T) {
			skipLargeInShort(t, capBytes)
			path := filepath.Join(t.TempDir(), "spool.db")
			clk := newFakeClock()
			opts := Options{MaxSize: capBytes, Now: clk.Now, Quotas: map[Origin]int64{
				OriginCloud: capBytes / 2, OriginManager: capBytes / 2, OriginLocal: capBytes / 2, OriginRaw: capBytes / 4,
			}}
			s, err := Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			waiting, err := fillWaiting(t, s, "CLOUD", OriginCloud, 1<<20, OriginCloud)
			if !errors.Is(err, ErrFull) {
				t.Fatalf("filling stopped with %v, want ErrFull", err)
			}
			u, _ := s.Usage()
			t.Logf("cap %s: accepts stopped at %d%% of the cap (live %d%%), %d waiting",
				FormatSize(capBytes), u.File*100/capBytes, u.Live*100/capBytes, len(waiting))
			// The POS still gets its own share.
			pos, err := fillWaiting(t, s, "POS", OriginLocal, int(capBytes/256), "")
			if !errors.Is(err, ErrFull) {
				t.Fatalf("POS fill stopped with %v, want ErrFull", err)
			}
			waiting = append(waiting, pos...)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(path, opts); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, _, err := s.Accept(originTask("AFTER", OriginLocal, 1<<20)); !errors.Is(err, ErrFull) {
				t.Errorf("a 1 MiB ticket after the restart: %v, want ErrFull", err)
			}
			printWaiting(t, s, waiting)
			// The file may pass the cap only by the headroom kept for the
			// progress of accepted work, and after a restart too.
			if size, most := fileSize(t, s), boltLimit(runtime.GOOS, capBytes, s.headroom()); size > most {
				t.Errorf("file %d bytes after the restart, over the cap %d and its headroom (%d)", size, capBytes, most)
			}
		})
	}
}

// TestSalvagePastTheCap ensures salvage of a corrupt spool that held more
// than its (lowered) cap restores everything it read, growing past the
// cap, and that intake is then refused until the file is back under it,
// while every salvaged ticket still prints.
func TestSalvagePastTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	clk := newFakeClock()
	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	var waiting []string
	for i := range 60 {
		no := "BIG" + seqName(i)
		mustAccept(t, s, originTask(no, OriginLocal, 64<<10))
		mustMove(t, s, no, StateQueued, Change{})
		waiting = append(waiting, no)
	}
	s.Close()
	// Both meta pages garbled: bbolt cannot open it, salvage reads the
	// leaves.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 * pageBytes {
		raw[i] = 0xA5
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	const capBytes = 2 << 20
	s, err = Open(path, Options{Now: clk.Now, MaxSize: capBytes, Reserve: 512 << 10, MaxTaskBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ce *CorruptError
	if !errors.As(s.Recovered(), &ce) {
		t.Fatalf("recovered %v, want a salvage", s.Recovered())
	}
	if ce.SalvageErr != nil || ce.Salvaged != len(waiting) || ce.Active != len(waiting) {
		t.Fatalf("salvage of a spool past its cap: salvaged %d (%d active) of %d, err %v", ce.Salvaged, ce.Active, len(waiting), ce.SalvageErr)
	}
	if _, _, err := s.Accept(originTask("NEW", OriginLocal, 1<<10)); !errors.Is(err, ErrFull) {
		t.Fatalf("accept past the cap after salvage: %v, want ErrFull", err)
	}
	if u, _ := s.Usage(); u.Percent() < 100 {
		t.Errorf("usage %d%% with the file past the cap", u.Percent())
	}
	printWaiting(t, s, waiting)
}

// TestCompactChecksItFits ensures a compaction whose copy would not fit on
// the disk with keep_free left is not started: it says what it needs, no
// copy is written, and the spool goes on as it was.
func TestCompactChecksItFits(t *testing.T) {
	s, _ := openTest(t, Options{KeepFree: 64 << 20})
	for i := range 20 {
		mustAccept(t, s, originTask("C"+seqName(i), OriginLocal, 64<<10))
	}
	before := fileSize(t, s)
	s.mu.Lock()
	s.free = func() (uint64, error) { return 40 << 20, nil }
	s.mu.Unlock()
	_, err := s.Compact()
	var re *CompactRoomError
	if !errors.As(err, &re) || !errors.Is(err, ErrNoRoomToCompact) {
		t.Fatalf("compact with 40 MiB free and 64 MiB keep_free: %v, want a CompactRoomError", err)
	}
	if re.Free != 40<<20 || re.Need < 64<<20 {
		t.Errorf("refusal %+v: want the disk's free space and a need past keep_free", re)
	}
	if _, err := os.Stat(s.Path() + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a copy was started: %v", err)
	}
	if fileSize(t, s) != before {
		t.Error("the spool file changed")
	}
	mustMove(t, s, "C"+seqName(0), StateQueued, Change{})
}

// TestCapHoldsAcrossRestart ensures a spool reopened with its file at or
// past the cap (here the cap was lowered) keeps a limit in bbolt: intake
// is refused, the progress of its tickets may use the headroom past its
// pages, and nothing lets the file grow beyond that.
func TestCapHoldsAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, Options{MaxSize: 16 << 20, Reserve: -1, MaxTaskBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := fillUntilFull(t, s, "F", 60<<10)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("fill: %v", err)
	}
	s.Close()
	const capBytes = 8 << 20
	opened := fileSizeAt(t, path)
	s, err = Open(path, Options{MaxSize: capBytes, MaxTaskBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var pages int64
	_ = s.view(func(tx *bolt.Tx) error { pages = tx.Size(); return nil })
	if s.db.MaxSize <= 0 || int64(s.db.MaxSize) > boltLimit(runtime.GOOS, pages, s.headroom()) {
		t.Fatalf("after a restart past the cap bbolt's limit is %d, want the file's pages (%d) and the headroom", s.db.MaxSize, pages)
	}
	if _, _, err := s.Accept(originTask("NEW", OriginLocal, 1<<10)); !errors.Is(err, ErrFull) {
		t.Fatalf("accept past the cap: %v, want ErrFull", err)
	}
	for _, no := range accepted {
		mustMove(t, s, no, StateQueued, Change{})
	}
	printWaiting(t, s, accepted)
	if size := fileSizeAt(t, path); size > max(opened, int64(s.db.MaxSize)) {
		t.Fatalf("file %d bytes, grown from %d past bbolt's limit %d", size, opened, s.db.MaxSize)
	}
}

func fileSizeAt(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestReachableMirrorsBbolt holds reachable to bbolt's own check in
// DB.allocate (v1.5.0): a page whose end is at minsz is refused when, on
// Linux, minsz's growth (the next power of two up to AllocSize, else minsz
// plus AllocSize) passes MaxSize, and on Windows when its mapping (powers
// of two up to 1 GiB, then whole GiB) does. reachable must be the largest
// minsz bbolt allows, on both systems, for the caps a store may set.
func TestReachableMirrorsBbolt(t *testing.T) {
	mmapSize := func(n int64) int64 {
		for i := 15; i <= 30; i++ {
			if n <= 1<<i {
				return 1 << i
			}
		}
		return (n + maxMapStep - 1) / maxMapStep * maxMapStep
	}
	allowed := func(goos string, minsz, maxSize, alloc int64) bool {
		next := mmapSize(minsz)
		if goos != "windows" && next > alloc {
			next = minsz + alloc
		}
		return next <= maxSize
	}
	for _, goos := range []string{"linux", "windows"} {
		for _, maxSize := range []int64{8 << 20, 16 << 20, 24 << 20, 32 << 20, 100 << 20, 128 << 20, 1 << 30, 3 << 29} {
			alloc := allocStep(maxSize)
			r := reachable(goos, maxSize, alloc)
			if !allowed(goos, r, maxSize, alloc) {
				t.Errorf("%s, cap %s: reachable %d, which bbolt refuses", goos, FormatSize(maxSize), r)
			}
			if allowed(goos, r+pageBytes, maxSize, alloc) {
				t.Errorf("%s, cap %s: reachable %d, but bbolt allows a page more", goos, FormatSize(maxSize), r)
			}
			// bbolt's limit with a headroom (which, as headroom() does,
			// counts one growth step) must let progress's pages pass the
			// cap by the rest of it.
			if lim := boltLimit(goos, maxSize, 8<<20+alloc); !allowed(goos, maxSize+8<<20-pageBytes, lim, alloc) {
				t.Errorf("%s, cap %s: bbolt's limit %d leaves no headroom past the cap", goos, FormatSize(maxSize), lim)
			}
		}
	}
}
