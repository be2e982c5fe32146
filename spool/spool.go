package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the newest on-disk schema this build writes and reads.
const SchemaVersion = 1

// migrations[v] upgrades a spool from schema v to v+1 inside one transaction.
// Index 0 creates schema 1 from an empty file.
var migrations = []func(tx *bolt.Tx) error{
	0: createSchema1,
}

// Bucket names. Keys are laid out so that cursor order is the order callers
// need (see keys.go).
var (
	bucketMeta   = []byte("meta")
	bucketTasks  = []byte("tasks")  // task_no → Task JSON
	bucketQueue  = []byte("queue")  // lane 0x00 rank seq → task_no, non-terminal tasks only
	bucketSeq    = []byte("seq")    // seq → task_no, every task with a body
	bucketOutbox = []byte("outbox") // task_no 0x00 n → Event JSON
	bucketDone   = []byte("done")   // terminal-at task_no → nil, terminal tasks with a body
	bucketTombs  = []byte("tombs")  // terminal-at task_no → nil, pruned tasks (dedupe only)

	keySchema = []byte("schema")
	keySeq    = []byte("seq")
	keyOutbox = []byte("outbox_depth")
)

// Options tune a spool. The zero value is usable: every field has a default.
type Options struct {
	// LockTimeout bounds the wait for the file lock another process holds.
	// Default 2s.
	LockTimeout time.Duration
	// MaxSize caps the file size in bytes (0: no cap). Accept refuses new
	// tasks with ErrFull once the file's pages reach what bbolt lets them
	// reach under MaxSize, minus the reserve (room.go), so tasks already
	// accepted can still record their progress; that progress alone may
	// also take a headroom past MaxSize.
	MaxSize int64
	// Reserve is the room kept for the progress of accepted tasks: with
	// MaxSize it is taken off the cap (never less than two of the largest
	// tasks), and Accept also refuses new tasks when the file system has
	// less than Reserve bytes free. Default 4 MiB; a negative value
	// disables both checks and the headroom: bbolt's limit is MaxSize.
	Reserve int64
	// KeepFree is file-system space Accept never uses: it refuses new tasks
	// when the file system has less than Reserve plus KeepFree free, so the
	// spool never fills the disk other programs on the PC need (the POS).
	// Default 0; the agent sets it (DefaultLimits).
	KeepFree int64
	// Quotas caps what each origin's tasks may hold in the spool, as
	// counted by Charge: past its quota an origin's new tasks are refused
	// with a *QuotaError (an ErrFull) while the others still get in. An
	// origin not listed has no quota but the cap.
	Quotas map[Origin]int64
	// MaxTaskBytes limits a task's payload or document. Default 1 MiB.
	MaxTaskBytes int
	// DefaultTimeout is a task's deadline after accept when it names none.
	// Default 90s.
	DefaultTimeout time.Duration
	// Retention is how long a terminal task keeps its body and timeline.
	// Default 7 days.
	Retention time.Duration
	// DedupeWindow is how long a terminal task's task_no stays known, so the
	// same task_no is refused as a duplicate. Default 7 days; never shorter
	// than Retention.
	DedupeWindow time.Duration
	// MaxBatch caps how many operations one commit carries. Default 1024.
	MaxBatch int
	// Now is the clock for timestamps and deadlines. Default time.Now.
	Now func() time.Time
	// Elapsed, when set, is the time since Open on a clock no one steps,
	// which retention and the dedupe window are measured on
	// (retentionclock.go). Default: Now's readings since Open, which for
	// time.Now are the monotonic clock's. Tests set it to step Now alone.
	Elapsed func() time.Duration
	// Outbox says whether events owed to the cloud are written and bounds
	// them. The zero value writes them, capped; the agent disables it when
	// no cloud link is configured.
	Outbox OutboxOptions
	// FailCommit is a failure injection point for robustness tests: when it
	// returns an error, every operation of the next commit fails with it as
	// if the disk had refused the write (wrap syscall.ENOSPC to get
	// ErrFull). DANGEROUS: never set it outside tests.
	FailCommit func() error
}

func (o Options) withDefaults() Options {
	if o.LockTimeout <= 0 {
		o.LockTimeout = 2 * time.Second
	}
	if o.Reserve == 0 {
		o.Reserve = 4 << 20
	}
	if o.MaxTaskBytes <= 0 {
		o.MaxTaskBytes = DefaultMaxTaskBytes
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = 90 * time.Second
	}
	if o.Retention <= 0 {
		o.Retention = 7 * 24 * time.Hour
	}
	if o.DedupeWindow < o.Retention {
		o.DedupeWindow = o.Retention
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Outbox = o.Outbox.withDefaults()
	return o
}

// Spool is an open spool file. It is safe for concurrent use.
type Spool struct {
	path string
	opts Options

	// mu is held shared by every operation and exclusively by Compact and
	// Close, which swap or close the bbolt handle.
	mu        sync.RWMutex
	db        *bolt.DB
	closed    bool
	ops       chan *op
	loopDone  chan struct{}
	recovered error
	free      diskFree
	// reclaimed counts the finished tasks whose body went before their
	// retention ran out (reclaim.go).
	reclaimed atomic.Int64
	// age measures retention and the dedupe window (retentionclock.go).
	age *retentionClock
	// lim is what the spool enforces at its cap (room.go); strain what it
	// could not do lately.
	lim    limits
	strain strain
}

// Open opens (creating if needed) the spool at path. A file that is not a
// usable spool is moved aside as <path>.corrupt-<time>, a fresh spool is
// opened in its place and every task that can still be read from the old
// file is salvaged into it, with its state, timeline, flags and dedupe
// (outbox events are not: the cloud is told of re-armed tasks only);
// Recovered then reports what happened. Salvage never makes Open fail: if it
// fails, the fresh spool stays empty. A file written by a newer schema is
// refused with ErrSchemaTooNew and left untouched, and a file held by
// another process fails with ErrLocked after LockTimeout.
func Open(path string, opts Options) (*Spool, error) {
	opts = opts.withDefaults()
	s := &Spool{path: path, opts: opts}
	s.lim = s.planRoom()
	s.strain.kick = make(chan struct{}, 1)
	db, err := openChecked(path, opts)
	var corrupt *CorruptError
	if err != nil {
		var ce *corruption
		if !errors.As(err, &ce) {
			return nil, err
		}
		moved := fmt.Sprintf("%s.corrupt-%s", path, opts.Now().UTC().Format("20060102T150405.000000000Z"))
		if rerr := os.Rename(path, moved); rerr != nil {
			return nil, fmt.Errorf("open spool %s: unusable (%v) and could not move it aside: %w", path, ce.err, rerr)
		}
		corrupt = &CorruptError{Path: path, MovedTo: moved, At: opts.Now(), Err: ce.err}
		s.recovered = corrupt
		db, err = openChecked(path, opts)
		if err != nil {
			return nil, fmt.Errorf("open fresh spool %s after moving the corrupt one aside: %w", path, err)
		}
	}
	s.db = db
	if s.age, err = openRetentionClock(db, opts); err != nil {
		db.Close()
		return nil, fmt.Errorf("open spool %s: %w", path, err)
	}
	if corrupt != nil {
		s.salvage(corrupt)
	}
	if err := countOrigins(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open spool %s: count what each origin holds: %w", path, err)
	}
	s.free = newDiskFree(path)
	s.startLoop()
	return s, nil
}

// boltMaxSize is the MaxSize bbolt opens the spool at path with under
// opts: the cap and its headroom (room.go), the same after every restart;
// a file already past that (the cap was lowered, salvage grew past it)
// must still open, and on Windows bbolt refuses to map a file past its
// MaxSize. Once open, setBoltMax sets the limit the spool runs with.
func boltMaxSize(goos string, opts Options, path string) int64 {
	s := &Spool{opts: opts}
	limit := boltLimit(goos, opts.MaxSize, s.headroom())
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= limit {
		return limit
	}
	return boltLimit(goos, fi.Size(), 0)
}

// setBoltMax sets the limit bbolt grows db's file to: the cap and its
// headroom, or, for a file whose pages already reach past the cap, its
// pages and the headroom, so the progress of the tickets in it can still
// be written but nothing more: intake is refused (admit) until retention
// and Compact bring it under the cap. Computed from the pages, not the
// file's size, it does not creep from restart to restart.
func setBoltMax(db *bolt.DB, opts Options) {
	if opts.MaxSize <= 0 {
		return
	}
	s := &Spool{opts: opts}
	limit := boltLimit(runtime.GOOS, opts.MaxSize, s.headroom())
	_ = db.View(func(tx *bolt.Tx) error {
		if s.headroom() > 0 && tx.Size() > opts.MaxSize {
			limit = max(limit, boltLimit(runtime.GOOS, tx.Size(), s.headroom()))
		}
		return nil
	})
	db.MaxSize = int(limit)
}

// corruption marks an open failure that moving the file aside can cure.
type corruption struct{ err error }

func (c *corruption) Error() string { return c.err.Error() }

// openChecked opens the bbolt file, verifies its structure and brings its
// schema up to date. Damage anywhere in the file (including page faults from
// a truncated mapping, which the runtime turns into panics here) is reported
// as *corruption.
func openChecked(path string, opts Options) (db *bolt.DB, err error) {
	bopts := &bolt.Options{
		Timeout:      opts.LockTimeout,
		FreelistType: bolt.FreelistMapType,
	}
	if opts.MaxSize > 0 {
		bopts.MaxSize = int(boltMaxSize(runtime.GOOS, opts, path))
	}
	// bolt.Open can panic on a damaged file (a bad freelist) after it opened
	// and locked it, and then returns no *DB to close: the hook keeps the
	// file so the recover can close it. Left open, the handle leaks, and on
	// Windows it makes moving the file aside fail ("Sharing violation"), so
	// the agent would exit instead of salvaging.
	var file *os.File
	bopts.OpenFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, mode)
		file = f
		return f, err
	}
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				db.Close()
			} else if file != nil {
				file.Close()
			}
			db, err = nil, &corruption{fmt.Errorf("structure check panicked: %v", r)}
		}
	}()
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)

	if err := preflight(path); err != nil {
		return nil, err
	}
	// A read error is bbolt's to meet and report on its own terms.
	_ = warmCache(path)
	db, err = bolt.Open(path, 0o600, bopts)
	if err == nil {
		db.AllocSize = int(allocStep(opts.MaxSize))
	}
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, fmt.Errorf("open spool %s: %w (no lock within %s; is another printgate running?)", path, ErrLocked, opts.LockTimeout)
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
			errors.Is(err, berrors.ErrVersionMismatch), isSizeError(err):
			return nil, &corruption{err}
		}
		return nil, fmt.Errorf("open spool %s: %w", path, err)
	}
	if err := checkStructure(db); err != nil {
		db.Close()
		return nil, &corruption{err}
	}
	if err := migrate(db, path); err != nil {
		db.Close()
		return nil, err
	}
	if err := checkBuckets(db); err != nil {
		db.Close()
		return nil, &corruption{err}
	}
	setBoltMax(db, opts)
	return db, nil
}

// checkBuckets makes sure every bucket of the schema is there: a file that
// passes bbolt's check but lost one (damage, a stray tool) is corrupt, and
// salvaging it beats failing on it later.
func checkBuckets(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketTasks, bucketQueue, bucketSeq, bucketOutbox, bucketDone, bucketTombs} {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("bucket %s is missing", name)
			}
		}
		return nil
	})
}

func isSizeError(err error) bool {
	// bbolt reports a file shorter than its own header as a plain error.
	msg := err.Error()
	return len(msg) >= 20 && msg[:20] == "file size too small "
}

// checkStructure runs bbolt's consistency check: page references, freelist
// and ordering. It reads the whole file, which for a spool (tens of MiB at
// most after retention) costs milliseconds at start.
func checkStructure(db *bolt.DB) error {
	info, err := os.Stat(db.Path())
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	return db.View(func(tx *bolt.Tx) error {
		// A file cut short passes bbolt's open when its meta pages survive,
		// but touching a page past the end of the mapping faults. Refuse it
		// before the check walks there.
		if need := tx.Size(); info.Size() < need {
			return fmt.Errorf("file truncated: its pages need %d bytes, the file has %d", need, info.Size())
		}
		// Drain the whole channel: the checker goroutine reads this
		// transaction until it closes the channel.
		var first error
		for err := range tx.Check() {
			if first == nil {
				first = fmt.Errorf("consistency check: %w", err)
			}
		}
		return first
	})
}

func migrate(db *bolt.DB, path string) error {
	return db.Update(func(tx *bolt.Tx) error {
		v := uint64(0)
		if m := tx.Bucket(bucketMeta); m != nil {
			if b := m.Get(keySchema); len(b) == 8 {
				v = binary.BigEndian.Uint64(b)
			}
		}
		if v > SchemaVersion {
			return fmt.Errorf("open spool %s: %w: file has schema %d, this build knows up to %d; upgrade printgate or move the file aside", path, ErrSchemaTooNew, v, SchemaVersion)
		}
		for ; v < SchemaVersion; v++ {
			if err := migrations[v](tx); err != nil {
				return fmt.Errorf("migrate spool %s from schema %d: %w", path, v, err)
			}
			if err := tx.Bucket(bucketMeta).Put(keySchema, u64(v+1)); err != nil {
				return fmt.Errorf("migrate spool %s: %w", path, err)
			}
		}
		return nil
	})
}

func createSchema1(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketMeta, bucketTasks, bucketQueue, bucketSeq, bucketOutbox, bucketDone, bucketTombs} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// Path is the spool file's path.
func (s *Spool) Path() string { return s.path }

// Recovered returns a *CorruptError when Open found the file unusable and
// started afresh, else nil: where the old file went, how many tasks were
// salvaged and how many records were unreadable. The agent shows it loudly.
func (s *Spool) Recovered() error { return s.recovered }

// Check runs bbolt's consistency check over the whole file and returns the
// first problem found.
func (s *Spool) Check() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return checkStructure(s.db)
}

// Close waits for operations in progress, then closes the file.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.stopLoop()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close spool %s: %w", s.path, err)
	}
	return nil
}

// view runs fn in a read transaction under the shared lock.
func (s *Spool) view(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.db.View(fn)
}
