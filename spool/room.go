package spool

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Room at the cap. bbolt does not let its file reach MaxSize: on Linux a
// new page at the end is refused unless the page's end plus AllocSize (the
// step the file grows by) fits, and on Windows unless the next mapping
// (powers of two up to 1 GiB, then whole GiB) fits. A spool that counted
// on reaching its cap was refused by bbolt first, at half of a 32 MiB cap,
// and then could not even record the progress of the tickets it had
// taken. So the spool computes the high-water mark bbolt really lets the
// file reach under the cap, takes the reserve off it, and gives intake
// only what is left (admit). The progress of accepted work may use the
// reserve and, beyond it, a headroom past the cap that bbolt is given
// (headroom): a transition rewrites the task's record, body included, and
// bbolt keeps up to four values in one leaf page, so a transition of a
// large ticket may need several of them in one run of new pages. Intake
// never gets the headroom: past the cap nothing new is taken until the
// tickets there have finished and retention and Compact brought the file
// back under.

// allocStep is the AllocSize the spool gives bbolt under a cap of maxSize:
// bbolt's own 16 MiB, but a sixteenth of a smaller cap, so the file can
// grow to within a sixteenth of the cap rather than within 16 MiB of it.
// It costs a file resize (and its fsync) per step: at most 16 per fill.
func allocStep(maxSize int64) int64 {
	const step = 16 << 20
	if maxSize <= 0 || maxSize/16 >= step {
		return step
	}
	return max(maxSize/16/pageBytes*pageBytes, pageBytes)
}

// pageBytes is the page size the spool assumes for its margins: bbolt uses
// the OS page size, 4 KiB on the systems printgate runs on.
const pageBytes = 4 << 10

// maxMapStep is bbolt's mapping step past 1 GiB (common.MaxMmapStep).
const maxMapStep = 1 << 30

// reachable is the largest high-water mark (the end of the last page, plus
// bbolt's one page of slack) bbolt lets the file reach under maxSize, on
// goos, growing by alloc: the mirror of bbolt's check in DB.allocate.
func reachable(goos string, maxSize, alloc int64) int64 {
	if maxSize <= 0 {
		return 0
	}
	if goos == "windows" {
		// The mapping must fit: powers of two from 32 KiB up to 1 GiB,
		// then whole GiB.
		if maxSize >= maxMapStep {
			return maxSize / maxMapStep * maxMapStep
		}
		return floorPow2(maxSize)
	}
	// Up to alloc the file grows by powers of two; past it, the end of
	// the new page plus alloc must fit.
	return max(min(floorPow2(maxSize), alloc), maxSize-alloc)
}

// transitionNeed is the room one transition may need at the end of the
// file: bbolt writes the leaf holding the task's record (up to four
// records, bodies included) into new pages, plus the index, outbox and
// meta pages it touches.
func (s *Spool) transitionNeed() int64 {
	return 4*Charge(s.opts.MaxTaskBytes) + 16*pageBytes
}

// reserveBytes is the room kept below the cap for the progress of accepted
// work: Options.Reserve, but never less than two of the largest records,
// which also takes intake's one overshoot (admit).
func (s *Spool) reserveBytes() int64 {
	return max(s.opts.Reserve, 2*Charge(s.opts.MaxTaskBytes)+16*pageBytes)
}

// headroom is how far past the cap bbolt may grow the file for the
// progress of accepted work alone: two transitions of the largest records
// and one growth step.
func (s *Spool) headroom() int64 {
	if s.opts.Reserve < 0 {
		// No reserve, no headroom: bbolt's own limit is the cap.
		return 0
	}
	return 2*s.transitionNeed() + allocStep(s.opts.MaxSize)
}

// boltLimit is the MaxSize bbolt is given on goos for a cap of maxSize
// with headroom past it: on Windows a whole mapping step, since there the
// file grows by mappings.
func boltLimit(goos string, maxSize, headroom int64) int64 {
	n := maxSize + headroom
	if goos == "windows" {
		if n >= maxMapStep {
			return (n + maxMapStep - 1) / maxMapStep * maxMapStep
		}
		if p := floorPow2(n); p < n {
			return 2 * p
		}
	}
	return n
}

// limits is what the spool enforces at its cap, computed once at Open.
type limits struct {
	// hard is the high-water mark bbolt lets the file reach under the
	// cap (reachable); the progress of accepted work may go past it, into
	// the headroom.
	hard int64
	// intake is where intake stops: hard less the reserve.
	intake int64
	// capped says the spool has a cap and enforces it (MaxSize set,
	// Reserve not negative).
	capped bool
}

func (s *Spool) planRoom() limits {
	if s.opts.MaxSize <= 0 || s.opts.Reserve < 0 {
		return limits{}
	}
	hard := reachable(runtime.GOOS, s.opts.MaxSize, allocStep(s.opts.MaxSize))
	return limits{hard: hard, intake: max(hard-s.reserveBytes(), 0), capped: true}
}

// fileRoom is what one write transaction may give intake: room is what is
// left at the end of the file below the intake limit (negative past it),
// free what bbolt holds free for reuse inside the file.
type fileRoom struct {
	room, free int64
	// tail and fromFree are what this transaction has admitted so far
	// against room and against free pages.
	tail, fromFree int64
}

func (s *Spool) fileRoom(tx *bolt.Tx) fileRoom {
	st := tx.DB().Stats()
	return fileRoom{
		room: s.lim.intake - tx.Size() - pageBytes,
		free: int64(st.FreePageN) * int64(tx.DB().Info().PageSize),
	}
}

// admit decides whether a new task charged c fits, on the file: at the end
// of the file below the intake limit, or (one task per transaction) in the
// pages free inside the file when there are plenty. bbolt takes free pages
// only in runs long enough, so the second may land at the end after all:
// that overshoot is bounded by one task, which the reserve takes
// (reserveBytes), and the next task is refused until Compact.
func (s *Spool) admit(r *fileRoom, c int64) bool {
	if !s.lim.capped {
		return true
	}
	need := c + 4*pageBytes
	switch {
	case r.room-r.tail >= need:
		r.tail += need
		return true
	case r.room >= 0 && r.fromFree == 0 && r.free >= 2*need:
		r.fromFree += need
		return true
	}
	return false
}

// strain is what the spool remembers of work it could not take or record,
// for the health report: a spool that refuses work says so.
type strain struct {
	mu            sync.Mutex
	refusedAt     time.Time
	refused       int64
	writeFailedAt time.Time
	writeErr      error
	writeFails    int64
	compactWanted bool
	// wantRoom is the most room at the end of the file a door asked for
	// since the last compaction (wantCompactFor); 0 when none did.
	wantRoom int64
	// kick tells the agent's maintenance that intake was refused on the
	// file while a compaction could make room (CompactWanted).
	kick chan struct{}
}

// Strain is what the spool could not do lately, for /healthz and the
// manager page.
type Strain struct {
	// RefusedAt is when intake last refused a task for room (the cap, the
	// disk's keep_free); Refused counts those refusals since Open.
	RefusedAt time.Time
	Refused   int64
	// WriteFailedAt is when the progress of accepted work (a transition,
	// an event) last failed to be written, WriteErr why; WriteFails counts
	// those failures since Open. Each failure is retried by its owner.
	WriteFailedAt time.Time
	WriteErr      error
	WriteFails    int64
}

// Strain reports what the spool could not do lately.
func (s *Spool) Strain() Strain {
	s.strain.mu.Lock()
	defer s.strain.mu.Unlock()
	return Strain{
		RefusedAt: s.strain.refusedAt, Refused: s.strain.refused,
		WriteFailedAt: s.strain.writeFailedAt, WriteErr: s.strain.writeErr, WriteFails: s.strain.writeFails,
	}
}

func (s *Spool) noteRefused(wantCompact bool) {
	s.strain.mu.Lock()
	defer s.strain.mu.Unlock()
	s.strain.refusedAt = s.opts.Now()
	s.strain.refused++
	if wantCompact {
		s.wantCompactLocked()
	}
}

// wantCompactFor notes that a door lacked room bytes at the end of the
// file, so that the maintenance looks at once whether a compaction would
// give them (CompactWanted, Fragmented).
func (s *Spool) wantCompactFor(room int64) {
	s.strain.mu.Lock()
	defer s.strain.mu.Unlock()
	s.strain.wantRoom = max(s.strain.wantRoom, room)
	s.wantCompactLocked()
}

// wantCompactLocked notes a compaction is wanted; s.strain.mu is held.
func (s *Spool) wantCompactLocked() {
	s.strain.compactWanted = true
	select {
	case s.strain.kick <- struct{}{}:
	default:
	}
}

// CompactWanted is signalled when intake was refused on the file: the
// maintenance that compacts (agent.Maintain) then looks at once whether a
// compaction would make room (Fragmented), rather than at its next check.
func (s *Spool) CompactWanted() <-chan struct{} { return s.strain.kick }

func (s *Spool) noteWriteFailed(err error) {
	s.strain.mu.Lock()
	defer s.strain.mu.Unlock()
	s.strain.writeFailedAt = s.opts.Now()
	s.strain.writeErr = err
	s.strain.writeFails++
}

// Room reports whether a new task charged need (Charge) would be taken now
// as far as the cap and the disk go (quotas aside), for a door that must
// know before it reads a job (the raw port's ready). It asks for one
// largest task more than need: other writes (a lane's transitions, another
// door) may take room while the job is read, and a job read and then
// refused is a ticket the POS believes printed.
func (s *Spool) Room(need int64) (bool, error) {
	if s.lowSpace() {
		return false, nil
	}
	ok := true
	err := s.view(func(tx *bolt.Tx) error {
		r := s.fileRoom(tx)
		ok = s.admit(&r, need+Charge(s.opts.MaxTaskBytes))
		return nil
	})
	if err == nil && !ok {
		// A door that asks before it reads waits for this room and sends
		// nothing that Accept could refuse: without the wish, a file short
		// of it but below Fragmented's threshold was never compacted, and
		// the raw port waited for good with the file mostly free.
		s.wantCompactFor(need + Charge(s.opts.MaxTaskBytes) + 8*pageBytes)
	}
	return ok, err
}

// compactMargin is what a compaction's copy may take beyond the live data:
// the tree's pages are rebuilt, and the new file grows by bbolt's steps.
const compactMargin = 16 << 20

// ErrNoRoomToCompact means a compaction was not started because its copy
// would not fit on the disk beside the spool with keep_free left.
var ErrNoRoomToCompact = errors.New("not enough disk space to compact the spool")

// CompactRoomError is a compaction refused before it began: the copy
// needs Need bytes (the live data, a margin and keep_free) and the disk
// has Free. Nothing was written.
type CompactRoomError struct {
	Need, Free int64
}

// Error says what the copy needs and what the disk has.
func (e *CompactRoomError) Error() string {
	return fmt.Sprintf("%s: the copy needs %s (live data, a margin and keep_free) and the disk has %s free", ErrNoRoomToCompact, FormatSize(e.Need), FormatSize(e.Free))
}

// Unwrap makes a CompactRoomError an ErrNoRoomToCompact.
func (e *CompactRoomError) Unwrap() error { return ErrNoRoomToCompact }

// compactFits checks, before Compact copies anything, that the copy fits
// on the disk and leaves KeepFree: a copy that cannot fit would fill the
// disk the POS needs and fail anyway, holding every operation meanwhile.
// Callers hold s.mu.
func (s *Spool) compactFits() error {
	if s.free == nil {
		return nil
	}
	avail, err := s.free()
	if err != nil {
		return nil
	}
	var live int64
	_ = s.db.View(func(tx *bolt.Tx) error {
		live = tx.Size() - int64(tx.DB().Stats().FreeAlloc)
		return nil
	})
	need := live + compactMargin + s.opts.KeepFree
	if int64(avail) < need {
		return &CompactRoomError{Need: need, Free: int64(avail)}
	}
	return nil
}

// compacted clears the wish for a compaction once one has run.
func (s *Spool) compacted() {
	s.strain.mu.Lock()
	s.strain.compactWanted, s.strain.wantRoom = false, 0
	s.strain.mu.Unlock()
}
