package spool

import (
	"fmt"
	"path/filepath"
)

// The spool's default size limits: with no max_size in the
// config the spool once had no cap, and a flood through the raw port filled
// the disk of the PC the POS runs on. The default cap is a share of the
// file system, within a floor (room for a week of a busy store) and a
// ceiling (a spool never needs more), and a part of the file system is
// never used whatever the cap says.
const (
	// DefaultCapPercent is the share of the file system's size the spool
	// may use by default.
	DefaultCapPercent = 10
	// DefaultCapFloor and DefaultCapCeiling bound the default cap.
	DefaultCapFloor   = 64 << 20
	DefaultCapCeiling = 1 << 30
	// DefaultKeepFree and DefaultKeepFreePercent are the space kept free
	// on the file system by default: the smaller of the two.
	DefaultKeepFree        = 256 << 20
	DefaultKeepFreePercent = 5
)

// Limits is the size plan of a spool: its cap and the space it leaves free,
// and how they were chosen, for the startup log and `printgate status`.
type Limits struct {
	// Cap is the spool's MaxSize.
	Cap int64
	// KeepFree is the spool's KeepFree.
	KeepFree int64
	// DefaultCap says Cap was computed (no max_size was set); Clamped says
	// how: "" (the share), "floor" or "ceiling".
	DefaultCap bool
	Clamped    string
	// DiskSize is the size of the file system holding Dir, when DiskKnown.
	DiskSize  uint64
	DiskKnown bool
	Dir       string
}

// PlanLimits works out the limits of a spool in dir: maxSize and keepFree
// when set (> 0), else the defaults from the size of dir's file system. A
// file system whose size cannot be read gets the ceiling and
// DefaultKeepFree.
func PlanLimits(dir string, maxSize, keepFree int64) Limits {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	_, total, err := diskSpace(dir)
	return planLimits(dir, maxSize, keepFree, total, err == nil && total > 0)
}

// planLimits is PlanLimits for a file system of total bytes (known).
func planLimits(dir string, maxSize, keepFree int64, total uint64, known bool) Limits {
	l := Limits{Cap: maxSize, KeepFree: keepFree, Dir: dir, DiskSize: total, DiskKnown: known}
	if l.Cap <= 0 {
		l.DefaultCap = true
		l.Cap = DefaultCapCeiling
		if l.DiskKnown {
			// Rounded down to a power of two: bbolt maps the file in
			// power-of-two steps up to 1 GiB, and on Windows a step past
			// the cap is refused, so a cap between two steps would be
			// the lower one anyway.
			l.Cap = floorPow2(int64(l.DiskSize * DefaultCapPercent / 100))
		}
		switch {
		case l.Cap < DefaultCapFloor:
			l.Cap, l.Clamped = DefaultCapFloor, "floor"
		case l.Cap >= DefaultCapCeiling:
			// Equal counts as the ceiling too: it is what an unknown
			// disk gets.
			l.Cap, l.Clamped = DefaultCapCeiling, "ceiling"
		}
	}
	if l.KeepFree <= 0 {
		l.KeepFree = DefaultKeepFree
		if l.DiskKnown {
			l.KeepFree = min(l.KeepFree, int64(l.DiskSize*DefaultKeepFreePercent/100))
		}
	}
	return l
}

// floorPow2 is the largest power of two not above n (n > 0), else 0.
func floorPow2(n int64) int64 {
	if n <= 0 {
		return 0
	}
	p := int64(1)
	for p <= n/2 {
		p *= 2
	}
	return p
}

// Why says how Cap was chosen, for a person: "default: 10% of the 200 GiB
// file system holding /var/lib/printgate, ceiling 1 GiB" (the share is
// rounded down to a power of two: 10% of 8 GiB is a 512 MiB cap).
func (l Limits) Why() string {
	if !l.DefaultCap {
		return "max_size"
	}
	disk := "the file system holding " + l.Dir + " (size unknown)"
	if l.DiskKnown {
		disk = fmt.Sprintf("the %s file system holding %s", FormatSize(int64(l.DiskSize)), l.Dir)
	}
	s := fmt.Sprintf("default: %d%% of %s", DefaultCapPercent, disk)
	switch l.Clamped {
	case "floor":
		s += ", floor " + FormatSize(DefaultCapFloor)
	case "ceiling":
		s += ", ceiling " + FormatSize(DefaultCapCeiling)
	}
	return s
}

// FormatSize writes n bytes as a person reads them: "1 GiB", "64 MiB",
// "1.5 GiB", "512 B".
func FormatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 || v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}
