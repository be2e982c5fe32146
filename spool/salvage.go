package spool

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Salvage of a corrupt spool file. bbolt's own open and
// traversal trust the file and may fail or fault on damage, so the salvage
// reads the raw pages itself, checking every bound, and keeps every task
// record it can decode. Indexes (queue, seq, done, tombs) and counters are
// rebuilt from the tasks rather than trusted; outbox events are not
// salvaged, because the outbox is only a cache of what the cloud is owed and
// old copies of acknowledged events linger in freed pages. Instead each
// salvaged task gets one event stating its current state, numbered past
// every event number seen for it, so the cloud converges on what the spool
// now says whatever it missed.

// bbolt's file layout (go.etcd.io/bbolt/internal/common). Integers are in the
// byte order of the machine that wrote the file, since bbolt writes its
// structs as they are in memory; a spool is read where it was written.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	leafElemSize     = 16 // flags u32, pos u32, ksize u32, vsize u32
	branchElemSize   = 16 // pos u32, ksize u32, pgid u64
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	metaSize         = 64 // magic, version, page size, flags, root bucket, freelist, pgid, txid, checksum
	metaSumOffset    = 56 // the checksum covers the meta before it

	pageBranch = 0x01
	pageLeaf   = 0x02
	leafBucket = 0x01 // leaf element flag: the value is a bucket

	// maxWalkDepth bounds the tree walk and inline-bucket nesting, so a
	// damaged file cannot recurse without end.
	maxWalkDepth = 64
)

// reasonSalvaged is the reason recorded on a task re-armed by the salvage.
const reasonSalvaged = "salvaged from a corrupt spool"

// eventEpoch spaces the event numbers of a task whose count was lost or
// may be stale: its next event is numbered at the next multiple of it past
// every number seen, as Quarantine numbers a lost record's event. The
// cloud dedupes by (task_no, n), so a number it was sent once before,
// from a transition whose record and outbox key were both lost, must
// never come again; no task makes 2^20 transitions between two salvages.
const eventEpoch = 1 << 20

// nextEpoch returns the first event count of the epoch after n's.
func nextEpoch(n int) int { return (n/eventEpoch + 1) * eventEpoch }

var ne = binary.NativeEndian

// pageHeader is the header every bbolt page starts with.
type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

func parsePageHeader(b []byte) pageHeader {
	return pageHeader{id: ne.Uint64(b[0:]), flags: ne.Uint16(b[8:]), count: ne.Uint16(b[10:]), overflow: ne.Uint32(b[12:])}
}

// boltMeta is what the salvage and preflight need of a valid meta page.
type boltMeta struct {
	pageSize uint32
	root     uint64 // page of the root bucket
	freelist uint64 // page of the freelist, boltNoFreelist for none
	pgid     uint64 // the high-water mark: pages below it are in the file
	txid     uint64
}

// parseMeta reads the meta page at the start of b and reports whether its
// magic, version, checksum and page size hold.
func parseMeta(b []byte) (boltMeta, bool) {
	if len(b) < pageHeaderSize+metaSize {
		return boltMeta{}, false
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	h.Write(m[:metaSumOffset])
	if ne.Uint32(m[0:]) != boltMagic || ne.Uint32(m[4:]) != boltVersion || ne.Uint64(m[metaSumOffset:]) != h.Sum64() {
		return boltMeta{}, false
	}
	bm := boltMeta{pageSize: ne.Uint32(m[8:]), root: ne.Uint64(m[16:]), freelist: ne.Uint64(m[32:]), pgid: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}
	if bm.pageSize < 512 || bm.pageSize > 1<<24 || bm.pageSize&(bm.pageSize-1) != 0 {
		return boltMeta{}, false
	}
	return bm, true
}

// boltFile reads pages of a bbolt file that may be damaged.
type boltFile struct {
	r        io.ReaderAt
	size     int64
	pageSize int64
	pages    uint64 // whole pages in the file
}

// openBoltFile finds the page size and the newest valid meta page: from
// meta page 0, else meta page 1 at each possible page size, else the
// operating system's page size (bbolt's default) with no meta at all.
func openBoltFile(r io.ReaderAt, size int64) (*boltFile, *boltMeta) {
	read := func(off int64) []byte {
		b := make([]byte, pageHeaderSize+metaSize)
		if off < 0 || off+int64(len(b)) > size {
			return nil
		}
		if _, err := r.ReadAt(b, off); err != nil {
			return nil
		}
		return b
	}
	var metas []boltMeta
	if m, ok := parseMeta(read(0)); ok {
		metas = append(metas, m)
		if m1, ok := parseMeta(read(int64(m.pageSize))); ok && m1.pageSize == m.pageSize {
			metas = append(metas, m1)
		}
	} else {
		for ps := int64(1024); ps <= 1<<24; ps *= 2 {
			if m1, ok := parseMeta(read(ps)); ok && int64(m1.pageSize) == ps {
				metas = append(metas, m1)
				break
			}
		}
	}
	f := &boltFile{r: r, size: size, pageSize: int64(os.Getpagesize())}
	if f.pageSize < 512 || f.pageSize&(f.pageSize-1) != 0 {
		f.pageSize = 4096
	}
	var best *boltMeta
	for i := range metas {
		if best == nil || metas[i].txid > best.txid {
			best = &metas[i]
		}
	}
	if best != nil {
		f.pageSize = int64(best.pageSize)
	}
	f.pages = uint64(size / f.pageSize)
	return f, best
}

// header reads the header of the page-sized block id.
func (f *boltFile) header(id uint64) (pageHeader, error) {
	if id >= f.pages {
		return pageHeader{}, fmt.Errorf("page %d is past the end of the file (%d pages)", id, f.pages)
	}
	var b [pageHeaderSize]byte
	if _, err := f.r.ReadAt(b[:], int64(id)*f.pageSize); err != nil {
		return pageHeader{}, fmt.Errorf("read page %d: %w", id, err)
	}
	return parsePageHeader(b[:]), nil
}

// page reads page id with its overflow pages, after checking that its
// header names it and that it ends inside the file.
func (f *boltFile) page(id uint64) ([]byte, pageHeader, error) {
	h, err := f.header(id)
	if err != nil {
		return nil, h, err
	}
	if h.id != id {
		return nil, h, fmt.Errorf("page %d names itself %d", id, h.id)
	}
	if uint64(h.overflow) >= f.pages-id {
		return nil, h, fmt.Errorf("page %d runs %d pages past the end of the file", id, h.overflow)
	}
	b := make([]byte, int64(1+uint64(h.overflow))*f.pageSize)
	if _, err := f.r.ReadAt(b, int64(id)*f.pageSize); err != nil {
		return nil, h, fmt.Errorf("read page %d: %w", id, err)
	}
	return b, h, nil
}

// leafElem is one key/value pair of a leaf page.
type leafElem struct {
	flags      uint32
	key, value []byte
}

// leafElems decodes the count elements of the leaf page p (header included).
// It returns the elements that lie inside p and whether any did not.
func leafElems(p []byte, count uint16) ([]leafElem, bool) {
	var out []leafElem
	bad := false
	for i := 0; i < int(count); i++ {
		at := pageHeaderSize + i*leafElemSize
		if at+leafElemSize > len(p) {
			return out, true
		}
		e := p[at : at+leafElemSize]
		// pos is relative to the element's own address.
		start := uint64(at) + uint64(ne.Uint32(e[4:]))
		ksize, vsize := uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		if start+ksize+vsize > uint64(len(p)) {
			bad = true
			continue
		}
		out = append(out, leafElem{
			flags: ne.Uint32(e[0:]),
			key:   p[start : start+ksize],
			value: p[start+ksize : start+ksize+vsize],
		})
	}
	return out, bad
}

// branchChildren decodes the child page ids of the branch page p, and
// whether any element lay outside p.
func branchChildren(p []byte, count uint16) ([]uint64, bool) {
	var out []uint64
	for i := 0; i < int(count); i++ {
		at := pageHeaderSize + i*branchElemSize
		if at+branchElemSize > len(p) {
			return out, true
		}
		out = append(out, ne.Uint64(p[at+8:]))
	}
	return out, false
}

// salvaged is what a walk over a damaged file found.
type salvaged struct {
	// tasks holds, per task_no, the most advanced copy found.
	tasks map[string]*Task
	// events holds the highest outbox event number seen per task_no: a
	// task whose record numbers fewer events lost its latest record.
	events map[string]int
	// unreadable counts pages the file's tree names but that cannot be
	// read, leaf elements out of bounds and task records that do not
	// decode. Without a valid meta page there is no tree, and damage is
	// counted wherever a leaf page shows it.
	unreadable int
}

// walker walks a damaged bbolt file.
type walker struct {
	f      *boltFile
	live   map[uint64]bool // pages reachable from the newest valid meta
	found  *salvaged
	noTree bool
}

// scanFile reads every task record it can from the bbolt file in r. It
// never panics and never fails: whatever it cannot read, it counts.
//
// Pages reachable from the newest valid meta page are walked as a tree
// first, so that damage to them is counted; then every other page-sized
// block whose header names it as a leaf is read too, because the freed
// pages of copy-on-write hold older copies of records whose live page may
// be the damaged one. Records are told apart by content (a task is a value
// that decodes as a Task whose task_no is its key), not by bucket.
func scanFile(r io.ReaderAt, size int64) *salvaged {
	f, meta := openBoltFile(r, size)
	w := &walker{
		f:     f,
		live:  map[uint64]bool{0: true, 1: true},
		found: &salvaged{tasks: map[string]*Task{}, events: map[string]int{}},
	}
	if meta != nil {
		w.walk(meta.root, 0)
	} else {
		w.noTree = true
	}
	for id := uint64(2); id < f.pages; id++ {
		if w.live[id] {
			continue
		}
		h, err := f.header(id)
		if err != nil || h.id != id || h.flags != pageLeaf {
			continue
		}
		p, h, err := f.page(id)
		if err != nil {
			w.damaged(false)
			continue
		}
		w.leaf(p, h.count, false, false, 0)
	}
	return w.found
}

// damaged counts one unreadable page or record: always on a live page, and
// anywhere when the file has no tree to tell live pages from freed ones.
func (w *walker) damaged(live bool) {
	if live || w.noTree {
		w.found.unreadable++
	}
}

// walk reads the live page id and what it leads to; depth counts the pages
// above it.
func (w *walker) walk(id uint64, depth int) {
	if w.live[id] || depth > maxWalkDepth {
		return
	}
	w.live[id] = true
	p, h, err := w.f.page(id)
	if err != nil {
		w.damaged(true)
		return
	}
	for i := uint64(1); i <= uint64(h.overflow); i++ {
		w.live[id+i] = true
	}
	switch h.flags {
	case pageBranch:
		children, bad := branchChildren(p, h.count)
		if bad {
			w.damaged(true)
		}
		for _, c := range children {
			w.walk(c, depth+1)
		}
	case pageLeaf:
		w.leaf(p, h.count, true, false, depth)
	default:
		w.damaged(true)
	}
}

// leaf reads the elements of leaf page p: nested buckets (walked when live,
// read in place when inline) and records. An inline bucket never holds a
// bucket (bbolt inlines only buckets without any), so one that claims to is
// damage; this also keeps overlapping inline values from nesting without end.
func (w *walker) leaf(p []byte, count uint16, live, inline bool, depth int) {
	elems, bad := leafElems(p, count)
	if bad {
		w.damaged(live)
	}
	for _, e := range elems {
		if e.flags&leafBucket == 0 {
			w.record(e.key, e.value, live)
			continue
		}
		if inline || len(e.value) < bucketHeaderSize {
			w.damaged(live)
			continue
		}
		root := ne.Uint64(e.value)
		if root != 0 {
			if live {
				w.walk(root, depth+1)
			}
			continue
		}
		// An inline bucket: its only page follows the bucket header.
		page := e.value[bucketHeaderSize:]
		if len(page) < pageHeaderSize {
			w.damaged(live)
			continue
		}
		h := parsePageHeader(page)
		if h.flags != pageLeaf {
			w.damaged(live)
			continue
		}
		w.leaf(page, h.count, live, true, depth)
	}
}

// record keeps the pair if it is a task record or an outbox key.
func (w *walker) record(k, v []byte, live bool) {
	if taskNoShaped(k) {
		if len(v) == 0 || v[0] != '{' {
			return // another bucket's record (meta counters)
		}
		t, err := decodeTask(v)
		if err != nil || t.TaskNo != string(k) || !t.State.Valid() || t.Seq == 0 || (t.Pruned && !t.State.Terminal()) {
			w.damaged(live)
			return
		}
		if old := w.found.tasks[t.TaskNo]; old == nil || moreAdvanced(t, old) {
			w.found.tasks[t.TaskNo] = t
		}
		return
	}
	// outbox: task_no 0x00 n
	if n := len(k); n >= 6 && k[n-5] == 0 && taskNoShaped(k[:n-5]) {
		no := string(k[:n-5])
		if ev := int(binary.BigEndian.Uint32(k[n-4:])); ev > w.found.events[no] {
			w.found.events[no] = ev
		}
	}
}

// salvagedJob is the job summary a salvaged task's event carries, in case
// the cloud never had the task's first event: for a task not sent by the
// cloud whose record has its digest; nil otherwise.
func salvagedJob(t *Task) *JobInfo {
	if t.Origin == OriginCloud || !isSHA256Hex(t.SHA256) {
		return nil
	}
	return &JobInfo{Printer: t.Printer, Priority: t.Priority, Origin: t.Origin, Size: t.Size, SHA256: t.SHA256}
}

// addJob puts job on the outbox event n of taskNo, if the outbox holds it
// (not when the outbox is disabled).
func addJob(tx *bolt.Tx, taskNo string, n int, job *JobInfo) error {
	if job == nil {
		return nil
	}
	b := tx.Bucket(bucketOutbox)
	k := outboxKey(taskNo, n)
	raw := b.Get(k)
	if raw == nil {
		return nil
	}
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return fmt.Errorf("decode event %s/%d: %w", taskNo, n, err)
	}
	ev.Job = job
	enc, err := json.Marshal(&ev)
	if err != nil {
		return fmt.Errorf("encode event %s/%d: %w", taskNo, n, err)
	}
	return b.Put(k, enc)
}

// isSHA256Hex reports whether s is a SHA-256 in lowercase hex, as a job
// summary carries it; a record without one gets no summary.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// taskNoShaped is ValidTaskNo without building an error for every key.
func taskNoShaped(k []byte) bool {
	if len(k) == 0 || len(k) > MaxTaskNoLen {
		return false
	}
	for _, c := range k {
		if !keyChar(c, true) {
			return false
		}
	}
	return true
}

// moreAdvanced reports whether copy a of a task record is later than copy b:
// a later accept (the task_no came back after its dedupe window), then more
// history, then a later update, then the tombstone over the body it
// replaced (pruning changes neither).
func moreAdvanced(a, b *Task) bool {
	if !a.AcceptedAt.Equal(b.AcceptedAt) {
		return a.AcceptedAt.After(b.AcceptedAt)
	}
	if a.Events != b.Events {
		return a.Events > b.Events
	}
	if !a.UpdatedAt.Equal(b.UpdatedAt) {
		return a.UpdatedAt.After(b.UpdatedAt)
	}
	return a.Pruned && !b.Pruned
}

// salvageFile scans the corrupt file at path; a panic while reading it (the
// scan is written not to) is reported as an error.
func salvageFile(path string) (found *salvaged, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("salvage %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("salvage %s: %w", path, err)
	}
	defer func() {
		if r := recover(); r != nil {
			found, err = nil, fmt.Errorf("salvage %s: scan panicked: %v", path, r)
		}
	}()
	return scanFile(f, fi.Size()), nil
}

// salvage fills the fresh spool with what can be read of the corrupt file
// ce.MovedTo and records the outcome in ce. It runs in Open before the
// commit loop starts. If anything fails the fresh spool stays empty, as it
// was before salvage existed, and ce.SalvageErr says why.
func (s *Spool) salvage(ce *CorruptError) {
	found, err := salvageFile(ce.MovedTo)
	if err == nil {
		err = s.restore(found, ce)
	}
	if err != nil {
		ce.Salvaged, ce.Active, ce.Rearmed, ce.Suspect = 0, 0, 0, 0
		ce.SalvageErr = err
	}
	if found != nil {
		ce.Unreadable = found.unreadable
	}
}

// restore writes the salvaged tasks into the fresh spool in one transaction,
// rebuilding every index and counter from them. Tasks found SENDING are
// re-armed as outcome unknown; a live task whose record numbers fewer
// events than the outbox showed lost its latest record, so it is marked as
// a possible duplicate. Every task's event count moves to the next epoch
// past every number seen (its record's, the outbox keys'), and every task
// gets one outbox event: the re-arm's for a task found SENDING, else one
// restating its current state (with its job summary for a local task, in
// case the cloud never had its first event).
func (s *Spool) restore(found *salvaged, ce *CorruptError) (err error) {
	tasks := make([]*Task, 0, len(found.tasks))
	for _, t := range found.tasks {
		tasks = append(tasks, t)
	}
	slices.SortFunc(tasks, func(a, b *Task) int {
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		return strings.Compare(a.TaskNo, b.TaskNo)
	})
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("restore salvaged tasks: panicked: %v", r)
		}
	}()
	// What was read is never lost to the cap: the restore may grow the
	// file past it, and the file then keeps its size as bbolt's limit
	// while intake is refused until it is back under the cap (admit).
	s.db.MaxSize = 0
	defer setBoltMax(s.db, s.opts)
	var st CorruptError
	err = s.db.Update(func(tx *bolt.Tx) error {
		st = CorruptError{}
		meta := tx.Bucket(bucketMeta)
		var maxSeq uint64
		for _, t := range tasks {
			maxSeq = max(maxSeq, t.Seq)
		}
		used := make(map[uint64]bool, len(tasks))
		var sending []*Task
		for _, t := range tasks {
			if used[t.Seq] {
				// Two records claim one seq (never written so; damage):
				// the later one gets a new seq so neither hides the other.
				maxSeq++
				t.Seq = maxSeq
			}
			used[t.Seq] = true
			if !t.State.Terminal() {
				// A salvaged record may be an older copy of the task (the
				// page with its latest state was lost): it may have printed
				// since. Any copy it still prints carries the POSSIBLE
				// DUPLICATE banner, never silently a second time.
				t.PossibleDuplicate = true
				t.Message = reasonSalvaged + ": its latest record may have been lost; it may have printed"
				if found.events[t.TaskNo] > t.Events {
					t.Message = fmt.Sprintf("%s: its record misses its last %d transitions; it may have printed", reasonSalvaged, found.events[t.TaskNo]-t.Events)
					st.Suspect++
				}
			}
			t.Events = nextEpoch(max(t.Events, found.events[t.TaskNo]))
			if t.State != StateSending {
				// A task found SENDING gets its event from the re-arm below.
				ev := eventFor(t, t.State, t.Reason)
				ev.Job = salvagedJob(t)
				t.Events++
				if err := s.putEvent(tx, ev); err != nil {
					return err
				}
			}
			if err := putTask(tx, t); err != nil {
				return err
			}
			end := timeKey(t.UpdatedAt, t.TaskNo)
			var err error
			switch {
			case t.Pruned:
				err = tx.Bucket(bucketTombs).Put(end, nil)
			case t.State.Terminal():
				if err = tx.Bucket(bucketSeq).Put(u64(t.Seq), []byte(t.TaskNo)); err == nil {
					err = tx.Bucket(bucketDone).Put(end, nil)
				}
			default:
				if err = tx.Bucket(bucketSeq).Put(u64(t.Seq), []byte(t.TaskNo)); err == nil {
					err = tx.Bucket(bucketQueue).Put(queueKey(t.Lane(), t.Priority, t.Seq), []byte(t.TaskNo))
				}
				st.Active++
				if t.State == StateSending {
					sending = append(sending, t)
				}
			}
			if err != nil {
				return err
			}
			if !t.Pruned {
				if err := addCount(meta, t.State, 1); err != nil {
					return err
				}
			}
			st.Salvaged++
		}
		if err := meta.Put(keySeq, u64(maxSeq)); err != nil {
			return err
		}
		for _, t := range sending {
			nt, err := s.applyTransition(tx, t, StateUnknown, Change{Reason: reasonSalvaged})
			if err != nil {
				return fmt.Errorf("re-arm %s: %w", t.TaskNo, err)
			}
			if err := addJob(tx, nt.TaskNo, nt.Events, salvagedJob(nt)); err != nil {
				return fmt.Errorf("re-arm %s: %w", t.TaskNo, err)
			}
			st.Rearmed++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore salvaged tasks: %w", err)
	}
	ce.Salvaged, ce.Active, ce.Rearmed, ce.Suspect = st.Salvaged, st.Active, st.Rearmed, st.Suspect
	return nil
}
