package spool

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func originTask(no string, o Origin, n int) NewTask {
	nt := task(no, "k")
	nt.Origin = o
	nt.Payload = make([]byte, n)
	for i := range nt.Payload {
		nt.Payload[i] = 'a' + byte(i%26)
	}
	return nt
}

// TestQuotaRefusesOneOriginOnly ensures an origin past its quota is refused
// with a *QuotaError that is an ErrFull, while another origin still gets in,
// and that retention gives the quota back.
func TestQuotaRefusesOneOriginOnly(t *testing.T) {
	const body = 8 << 10
	quota := 10 * Charge(body)
	s, clk := openTest(t, Options{Retention: time.Hour, Quotas: map[Origin]int64{OriginRaw: quota, OriginLocal: quota}})
	for i := 0; i < 10; i++ {
		mustAccept(t, s, originTask("R"+seqName(i), OriginRaw, body))
	}
	_, _, err := s.Accept(originTask("R-over", OriginRaw, body))
	var qe *QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, ErrFull) {
		t.Fatalf("raw task past the quota: %v, want a QuotaError that is ErrFull", err)
	}
	if qe.Origin != OriginRaw || qe.Used != quota || qe.Quota != quota || qe.Need != Charge(body) {
		t.Fatalf("quota error %+v", qe)
	}
	mustAccept(t, s, originTask("L1", OriginLocal, body))
	mustAccept(t, s, originTask("C1", OriginCloud, body)) // no quota
	// A duplicate is answered even past the quota.
	if _, dup, err := s.Accept(originTask("R"+seqName(0), OriginRaw, body)); err != nil || !dup {
		t.Fatalf("duplicate past the quota: dup=%v err=%v", dup, err)
	}
	if u, err := s.Origin(OriginRaw); err != nil || u.Used != quota || !u.Full(1) {
		t.Fatalf("raw usage %+v, %v", u, err)
	}
	// Printed and past retention: the bodies go, and so does their charge.
	for i := 0; i < 10; i++ {
		no := "R" + seqName(i)
		mustMove(t, s, no, StateQueued, Change{})
		mustMove(t, s, no, StateSending, Change{})
		mustMove(t, s, no, StatePrinted, Change{})
	}
	clk.Advance(2 * time.Hour)
	if _, err := s.Prune(clk.Now()); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.Origin(OriginRaw); u.Used != 0 {
		t.Fatalf("raw usage after prune %d, want 0", u.Used)
	}
	// Pruning again changes nothing: the tombstones cost nothing.
	if _, err := s.Prune(clk.Now()); err != nil {
		t.Fatal(err)
	}
	mustAccept(t, s, originTask("R-again", OriginRaw, body))
}

// TestQuotaHoldsInOneBatch ensures concurrent accepts committed in one
// transaction cannot overshoot the quota together.
func TestQuotaHoldsInOneBatch(t *testing.T) {
	const body = 4 << 10
	quota := 5 * Charge(body)
	s, _ := openTest(t, Options{Quotas: map[Origin]int64{OriginRaw: quota}})
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		go func() {
			_, _, err := s.Accept(originTask("B"+seqName(i), OriginRaw, body))
			errs <- err
		}()
	}
	ok := 0
	for i := 0; i < 40; i++ {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrFull):
			t.Fatalf("accept: %v", err)
		}
	}
	if ok != 5 {
		t.Fatalf("%d raw tasks accepted against a quota of 5", ok)
	}
}

// TestOriginTotalsCountedOnce ensures a file without per-origin totals
// (written before quotas) is counted at Open, and the totals then survive a
// restart.
func TestOriginTotalsCountedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAccept(t, s, originTask("R1", OriginRaw, 1000))
	mustAccept(t, s, originTask("R2", OriginRaw, 2000))
	mustAccept(t, s, originTask("L1", OriginLocal, 3000))
	s.Close()
	// Forget the totals, as a file of an older build has none.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		for _, o := range Origins() {
			if err := m.Delete(originKey(o)); err != nil {
				return err
			}
		}
		return m.Delete(keyOriginsCounted)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err = Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := s.Origin(OriginRaw)
		local, _ := s.Origin(OriginLocal)
		s.Close()
		if raw.Used != Charge(1000)+Charge(2000) || local.Used != Charge(3000) {
			t.Fatalf("counted raw %d local %d", raw.Used, local.Used)
		}
	}
}

// TestKeepFreeRefusesNewWork ensures Accept refuses new tasks once the file
// system has less than Reserve plus KeepFree free.
func TestKeepFreeRefusesNewWork(t *testing.T) {
	s, _ := openTest(t, Options{Reserve: 1 << 20, KeepFree: 100 << 20})
	s.free = func() (uint64, error) { return 100 << 20, nil } // KeepFree left, Reserve not
	if _, _, err := s.Accept(task("T1", "k")); !errors.Is(err, ErrFull) {
		t.Fatalf("accept with only KeepFree free: %v, want ErrFull", err)
	}
	s.free = func() (uint64, error) { return 102 << 20, nil }
	mustAccept(t, s, task("T2", "k"))
}

// TestPlanLimits ensures the default cap is the share of the file system
// within its floor and ceiling, the space kept free the smaller of its
// two defaults, and explicit values win.
func TestPlanLimits(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		name           string
		maxSize, keep  int64
		total          uint64
		known          bool
		cap, keepFree  int64
		clamped, words string
	}{
		{"big disk", 0, 0, 200 * gib, true, DefaultCapCeiling, DefaultKeepFree, "ceiling", "default: 10% of the 200 GiB file system holding /d, ceiling 1 GiB"},
		{"share", 0, 0, 5 * gib, true, 512 << 20, DefaultKeepFree, "", "default: 10% of the 5 GiB file system holding /d"},
		{"share rounded down", 0, 0, 8 * gib, true, 512 << 20, DefaultKeepFree, "", "default: 10% of the 8 GiB file system holding /d"},
		{"small disk", 0, 0, 400 << 20, true, DefaultCapFloor, 20 << 20, "floor", "default: 10% of the 400 MiB file system holding /d, floor 64 MiB"},
		{"unknown disk", 0, 0, 0, false, DefaultCapCeiling, DefaultKeepFree, "ceiling", "default: 10% of the file system holding /d (size unknown), ceiling 1 GiB"},
		{"explicit", 16 << 20, 1 << 20, 200 * gib, true, 16 << 20, 1 << 20, "", "max_size"},
	}
	for _, c := range cases {
		l := planLimits("/d", c.maxSize, c.keep, c.total, c.known)
		if l.Cap != c.cap || l.KeepFree != c.keepFree || l.Clamped != c.clamped || l.Why() != c.words {
			t.Errorf("%s: got cap %d keep %d clamped %q why %q", c.name, l.Cap, l.KeepFree, l.Clamped, l.Why())
		}
	}
	if l := PlanLimits(t.TempDir(), 0, 0); !l.DiskKnown || l.Cap < DefaultCapFloor || l.Cap > DefaultCapCeiling {
		t.Errorf("the test's own disk: %+v", l)
	}
	for n, want := range map[int64]string{512: "512 B", 64 << 20: "64 MiB", 3 << 29: "1.5 GiB", 1 << 30: "1 GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestOpenPastTheCap ensures a spool file already bigger than the cap (an
// upgrade that brings the default cap to a spool that had none) opens, and
// refuses new work while it is over.
func TestOpenPastTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		mustAccept(t, s, originTask("BIG"+seqName(i), OriginLocal, 64<<10))
	}
	s.Close()
	s, err = Open(path, Options{MaxSize: 2 << 20, Reserve: 512 << 10, MaxTaskBytes: 64 << 10})
	if err != nil {
		t.Fatalf("open a file past its cap: %v", err)
	}
	defer s.Close()
	if _, _, err := s.Accept(task("NEW", "k")); !errors.Is(err, ErrFull) {
		t.Fatalf("accept past the cap: %v, want ErrFull", err)
	}
	// Progress of what is there still records.
	mustMove(t, s, "BIG"+seqName(0), StateQueued, Change{})
}
