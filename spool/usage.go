package spool

import bolt "go.etcd.io/bbolt"

// Usage is how full the spool is, for the health report and the manager
// page's "spool nearly full" alert: new work is refused at the cap, so a
// store wants to hear about it before.
type Usage struct {
	// Live is the bytes of the file in use: its size less the pages free
	// for reuse.
	Live int64
	// File is the part of the file bbolt has handed out as pages (its
	// high-water mark): what the cap is enforced on, since free pages
	// inside it take a new ticket only when a long enough run is free.
	File int64
	// Cap is where Accept starts refusing new tasks: the size bbolt lets
	// the file reach under MaxSize, less the reserve kept for the progress
	// of accepted tasks; 0 when the spool has no size cap.
	Cap int64
	// MaxSize is the configured cap; the file never grows past it.
	MaxSize int64
	// DiskFree is what the file system holding the spool has free, when
	// DiskKnown.
	DiskFree  uint64
	DiskKnown bool
}

// Percent is File as a share of Cap, 0 to 100 (more only past the cap); 0
// without a cap. It is measured on the file, not on the live data: pages
// free inside the file take a new ticket only in runs long enough, so a
// file at its cap refuses work until Compact rewrites it, however much of
// it is free.
func (u Usage) Percent() int {
	if u.MaxSize <= 0 {
		return 0
	}
	if u.Cap <= 0 {
		// The reserve takes the whole cap: nothing new fits.
		return 100
	}
	return int(u.File * 100 / u.Cap)
}

// Usage reports how full the spool is.
func (s *Spool) Usage() (Usage, error) {
	var u Usage
	err := s.view(func(tx *bolt.Tx) error {
		st := tx.DB().Stats()
		u.Live = tx.Size() - int64(st.FreeAlloc)
		u.File = tx.Size()
		return nil
	})
	if err != nil {
		return Usage{}, err
	}
	u.Cap, u.MaxSize = s.lim.intake, s.opts.MaxSize
	if s.free != nil {
		if avail, err := s.free(); err == nil {
			u.DiskFree, u.DiskKnown = avail, true
		}
	}
	return u, nil
}

// MaxTaskBytes is the largest payload or document Accept takes (Options),
// so intakes that read a stream themselves can stop at the same limit.
func (s *Spool) MaxTaskBytes() int { return s.opts.MaxTaskBytes }

// LowSpace reports whether the file system holding the spool has less free
// than Accept keeps (Reserve plus KeepFree): Accept then refuses new tasks,
// so an intake that reads a stream itself (the raw port) can wait before
// it reads one.
func (s *Spool) LowSpace() bool { return s.lowSpace() }
