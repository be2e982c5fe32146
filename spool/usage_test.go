package spool

import (
	"errors"
	"testing"
	"time"
)

// TestUsageGrowsToTheCap ensures Usage measures the spool against the size
// at which Accept refuses new work: it grows with accepted tasks and is at
// least 99% when Accept says full (a task is refused when it would not fit
// whole, so a little short of 100%).
func TestUsageGrowsToTheCap(t *testing.T) {
	s, _ := openTest(t, Options{MaxSize: 2 << 20, Reserve: 512 << 10, MaxTaskBytes: 64 << 10, Retention: time.Hour})
	before, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	// bbolt lets a file grow to within one growth step of its cap (on
	// Windows to the mapping below it); the reserve comes off that.
	if before.Cap > 2<<20-512<<10 || before.Cap < 2<<20-512<<10-allocStep(2<<20) || before.MaxSize != 2<<20 {
		t.Fatalf("cap %d, want what bbolt can reach under MaxSize less Reserve", before.Cap)
	}
	if _, err := fillUntilFull(t, s, "U", 16<<10); !errors.Is(err, ErrFull) {
		t.Fatalf("fill: %v", err)
	}
	after, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if after.Live <= before.Live || after.Percent() < 99 {
		t.Errorf("usage before %+v (%d%%), after full %+v (%d%%)", before, before.Percent(), after, after.Percent())
	}
	if !after.DiskKnown || after.DiskFree == 0 {
		t.Errorf("disk free not measured: %+v", after)
	}
}

// TestUsageWithoutCap ensures a spool without a size cap reports 0%.
func TestUsageWithoutCap(t *testing.T) {
	s, _ := openTest(t, Options{})
	u, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.Cap != 0 || u.Percent() != 0 || u.Live <= 0 {
		t.Errorf("usage %+v percent %d", u, u.Percent())
	}
}
