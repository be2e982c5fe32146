package wheel

import (
	"cmp"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"time"
)

// DefaultTick is the bottom level's resolution: fine enough that a timeout
// fires within 10 ms of its deadline, coarse enough that an idle agent wakes
// rarely.
const DefaultTick = 10 * time.Millisecond

// MinSpan is the shortest span the levels of a wheel are sized to cover
// without the overflow list, so that the agent's longest waits (a print task
// held for days) sit in a slot rather than being re-examined.
const MinSpan = 30 * 24 * time.Hour

const (
	slotBits  = 6
	numSlots  = 1 << slotBits // one uint64 occupancy bitmap per level
	slotMask  = numSlots - 1
	maxLevels = 10 // 6*10 bits of ticks; more would overflow a uint64 shift
)

// Wheel is a hierarchical timing wheel mapping keys to values with deadlines.
//
// Entries keep their absolute deadline. Level 0 has 64 slots of one tick
// each; level i has 64 slots of 64^i ticks. An entry sits at the lowest level
// whose slot can tell it apart from the current tick, and when its coarse slot
// comes round it is placed again from its absolute deadline, so error never
// accumulates however many levels it falls through. Deadlines beyond the top
// level wait in an overflow list and are placed when they come into range.
//
// Add and Cancel are O(1) (amortised over index growth); Advance costs
// O(entries due + occupied slots passed), plus a sort of each tick's due
// entries when they were not added in deadline order, skipping empty slots
// through per-level bitmaps, so a clock jump of days costs no spin per
// skipped tick. The slab and index keep their high-water size, like a map. Entries live in a slab of nodes linked
// by index with a free list, and keys are found through an open-addressing
// index into that slab, so steady-state Add and Cancel allocate nothing.
//
// A Wheel is not safe for concurrent use; [Scheduler] is the locked form.
type Wheel[K comparable, V any] struct {
	origin time.Time // tick 0; deadlines are measured from here
	tick   int64     // nanoseconds per tick
	levels int
	now    uint64 // every tick <= now has been processed

	bitmap []uint64 // bitmap[l] bit s set iff list (l, s) is non-empty

	// nodes[0:firstNode] are list sentinels: level l slot s is l*64+s, then
	// the overflow, ready and firing lists. Index 0 doubles as "nil" in the
	// free list and the key index because it is never a real entry.
	nodes    []node[K, V]
	free     uint32
	overflow uint32
	ready    uint32 // already due when added; delivered by the next Advance
	firing   uint32 // due in the tick being delivered, in delivery order
	// overflowMin is a lower bound on the earliest overflow tick; a cancel
	// may leave it stale, which costs one early look, never a late fire.
	overflowMin uint64

	index []uint64 // see index.go
	count int
	seed  maphash.Seed

	sortBuf    []uint32
	delivering bool
	steps      int // ticks Advance has stopped at; tests use it to prove jumps skip empty ticks
}

// node is one entry or list sentinel. Links are slab indices rather than
// pointers to keep a pending entry small and the slab opaque to the GC.
type node[K comparable, V any] struct {
	next, prev uint32
	deadline   int64 // nanoseconds after origin; negative if before it
	key        K
	val        V
}

// New returns an empty wheel whose tick 0 is origin, with the given tick
// (DefaultTick if tick <= 0). Pass a time from the same [clock.Clock] that will
// drive Advance, such as clock.Now(), so that differences use its monotonic
// reading.
func New[K comparable, V any](origin time.Time, tick time.Duration) *Wheel[K, V] {
	if tick <= 0 {
		tick = DefaultTick
	}
	levels := 1
	for levels < maxLevels && time.Duration(float64(tick)*math.Pow(numSlots, float64(levels))) < MinSpan {
		levels++
	}
	w := &Wheel[K, V]{
		origin:      origin,
		tick:        int64(tick),
		levels:      levels,
		bitmap:      make([]uint64, levels),
		overflowMin: math.MaxUint64,
		index:       make([]uint64, 16),
		seed:        maphash.MakeSeed(),
	}
	sentinels := uint32(levels*numSlots + 3)
	w.overflow = sentinels - 3
	w.ready = sentinels - 2
	w.firing = sentinels - 1
	w.nodes = make([]node[K, V], sentinels)
	for i := range w.nodes {
		w.nodes[i].next = uint32(i)
		w.nodes[i].prev = uint32(i)
	}
	return w
}

// Tick returns the wheel's resolution: an entry fires at most this long after
// its deadline when the wheel is advanced at the times Next reports.
func (w *Wheel[K, V]) Tick() time.Duration { return time.Duration(w.tick) }

// Len returns the number of pending entries.
func (w *Wheel[K, V]) Len() int { return w.count }

// Add schedules value under key to fire at deadline, replacing any pending
// entry with the same key: a re-add always wins, even for a key that is due
// in the tick being delivered, so it never silently vanishes. A deadline
// already reached fires on the next Advance. Among entries with equal
// deadlines the one added first fires first; a replaced entry counts as added
// now.
func (w *Wheel[K, V]) Add(key K, deadline time.Time, value V) {
	d := int64(deadline.Sub(w.origin)) // kept even if negative: it still orders delivery
	h, pos, i := w.find(key)
	if i != 0 {
		w.unlink(i)
	} else {
		i = w.alloc()
		w.nodes[i].key = key
		w.insertAt(h, pos, i)
	}
	n := &w.nodes[i]
	n.val = value
	n.deadline = d
	w.place(i, w.ready)
}

// Cancel removes the pending entry for key. It reports false if there is
// none, including when the entry has already been delivered.
func (w *Wheel[K, V]) Cancel(key K) bool {
	_, pos, i := w.find(key)
	if i == 0 {
		return false
	}
	w.unlink(i)
	w.deleteAt(pos)
	w.release(i)
	return true
}

// Deadline returns the deadline of the pending entry for key.
func (w *Wheel[K, V]) Deadline(key K) (time.Time, bool) {
	_, _, i := w.find(key)
	if i == 0 {
		return time.Time{}, false
	}
	return w.origin.Add(time.Duration(w.nodes[i].deadline)), true
}

// Next returns when Advance next has work: the start of the earliest tick
// holding a due entry or a coarse slot to cascade. It is never later than the
// tick on which the earliest entry fires, and may be earlier when a coarse
// slot must be split first; a driver simply advances then and asks again.
// It reports false when the wheel is empty.
func (w *Wheel[K, V]) Next() (time.Time, bool) {
	if w.nodes[w.ready].next != w.ready || w.nodes[w.firing].next != w.firing {
		return w.tickTime(w.now), true
	}
	t, ok := w.nextEvent()
	if !ok {
		return time.Time{}, false
	}
	return w.tickTime(t), true
}

// Advance moves the wheel to now and calls fn for every entry that is due,
// in order of deadline and, among equal deadlines, of insertion. An entry is
// due once now reaches the start of the first tick at or after its deadline,
// so it never fires early. It returns how many entries fired.
//
// Each entry is removed before fn sees it, so fn may Add (including re-adding
// the same key) and Cancel freely. An entry that fn adds with a deadline
// already reached fires on the next Advance, so a callback that keeps
// re-adding cannot trap Advance in a loop. fn must not call Advance.
// A now earlier than a previous Advance is ignored: the wheel never goes back.
func (w *Wheel[K, V]) Advance(now time.Time, fn func(K, V)) int {
	if w.delivering {
		panic("wheel: Advance called from its own callback")
	}
	w.delivering = true
	defer func() { w.delivering = false }()

	target := w.now
	if d := int64(now.Sub(w.origin)); d > 0 && uint64(d/w.tick) > target {
		target = uint64(d / w.tick)
	}
	fired := 0
	if w.nodes[w.ready].next != w.ready {
		w.splice(w.ready, w.firing)
		fired += w.deliver(fn)
	}
	for {
		t, ok := w.nextEvent()
		if !ok || t > target {
			break
		}
		w.now = t
		w.steps++
		w.expire(t)
		fired += w.deliver(fn)
	}
	w.now = target
	return fired
}

// expire moves everything due at tick t (== w.now) to the firing list and
// splits coarse slots that start at t into finer ones, from the top down so
// that split entries can land in the finer slots still to be examined.
func (w *Wheel[K, V]) expire(t uint64) {
	span := uint(slotBits * w.levels)
	if w.nodes[w.overflow].next != w.overflow && t >= w.overflowMin>>span<<span {
		w.overflowMin = math.MaxUint64
		w.replaceList(w.overflow)
	}
	for l := w.levels - 1; l >= 1; l-- {
		s := (t >> (slotBits * l)) & slotMask
		if w.bitmap[l]&(1<<s) != 0 {
			w.bitmap[l] &^= 1 << s
			w.replaceList(uint32(l*numSlots) + uint32(s))
		}
	}
	s := t & slotMask
	if w.bitmap[0]&(1<<s) != 0 {
		w.bitmap[0] &^= 1 << s
		w.splice(uint32(s), w.firing)
	}
}

// replaceList empties list head and places each of its entries again from its
// absolute deadline; entries due now go straight to the firing list rather
// than waiting a level.
func (w *Wheel[K, V]) replaceList(head uint32) {
	i := w.nodes[head].next
	if i == head {
		return
	}
	last := w.nodes[head].prev
	w.nodes[head].next, w.nodes[head].prev = head, head
	for {
		next := w.nodes[i].next
		w.place(i, w.firing)
		if i == last {
			return
		}
		i = next
	}
}

// deliver sorts the firing list by deadline and hands each entry to fn after
// removing it, so fn sees a wheel in which the entry no longer exists.
func (w *Wheel[K, V]) deliver(fn func(K, V)) int {
	w.sortFiring()
	fired := 0
	for {
		i := w.nodes[w.firing].next
		if i == w.firing {
			return fired
		}
		w.unlinkRaw(i)
		n := &w.nodes[i]
		key, val := n.key, n.val
		_, pos, _ := w.find(key)
		w.deleteAt(pos)
		w.release(i)
		fired++
		fn(key, val)
	}
}

// sortFiring orders the firing list by deadline with a stable sort, which is
// all FIFO among equal deadlines needs, because every list is already in
// insertion order: Add appends, and a coarse slot is split at the start of
// its span, when the finer slots of that span are still empty and before
// anything can be added to them directly, so split entries (older) land ahead
// of direct ones (newer). The same holds for the ready and overflow lists.
// Relying on this saves a sequence number, 8 bytes, in every node.
func (w *Wheel[K, V]) sortFiring() {
	head := w.firing
	first := w.nodes[head].next
	if first == head || w.nodes[first].next == head {
		return
	}
	buf := w.sortBuf[:0]
	sorted := true
	for i := first; i != head; i = w.nodes[i].next {
		if len(buf) > 0 && w.nodes[i].deadline < w.nodes[buf[len(buf)-1]].deadline {
			sorted = false
		}
		buf = append(buf, i)
	}
	w.sortBuf = buf[:0]
	if sorted {
		return
	}
	slices.SortStableFunc(buf, func(a, b uint32) int {
		return cmp.Compare(w.nodes[a].deadline, w.nodes[b].deadline)
	})
	w.nodes[head].next, w.nodes[head].prev = head, head
	for _, i := range buf {
		w.pushBack(head, i)
	}
}

// place links entry i into the list its deadline selects relative to w.now;
// an entry already due goes to dueList.
func (w *Wheel[K, V]) place(i, dueList uint32) {
	e := w.expiry(w.nodes[i].deadline)
	if e <= w.now {
		w.pushBack(dueList, i)
		return
	}
	l := (bits.Len64(e^w.now) - 1) / slotBits
	if l >= w.levels {
		w.pushBack(w.overflow, i)
		w.overflowMin = min(w.overflowMin, e)
		return
	}
	s := (e >> (slotBits * l)) & slotMask
	w.pushBack(uint32(l*numSlots)+uint32(s), i)
	w.bitmap[l] |= 1 << s
}

// unlink removes entry i from whichever list holds it, clearing the slot's
// bitmap bit when the slot empties. The slot is recomputed from the deadline:
// an entry in a wheel slot always differs from w.now first in its level's
// digits, because a slot is split as soon as w.now reaches it.
func (w *Wheel[K, V]) unlink(i uint32) {
	e := w.expiry(w.nodes[i].deadline)
	w.unlinkRaw(i)
	if e <= w.now {
		return // ready or firing list: no bitmap
	}
	l := (bits.Len64(e^w.now) - 1) / slotBits
	if l >= w.levels {
		return // overflow list
	}
	s := (e >> (slotBits * l)) & slotMask
	head := uint32(l*numSlots) + uint32(s)
	if w.nodes[head].next == head {
		w.bitmap[l] &^= 1 << s
	}
}

// nextEvent returns the earliest tick after w.now with work. A finer level's
// occupied slots all lie before any coarser level's, so the first occupied
// level from the bottom decides.
func (w *Wheel[K, V]) nextEvent() (uint64, bool) {
	for l := 0; l < w.levels; l++ {
		bm := w.bitmap[l]
		if bm == 0 {
			continue
		}
		shift := slotBits * l
		digit := (w.now >> shift) & slotMask
		// Slots at or behind the cursor are empty by construction; masking
		// them keeps a broken invariant from becoming a tick in the past.
		m := bm & (^uint64(0) << (digit + 1))
		if m == 0 {
			m = bm
		}
		s := uint64(bits.TrailingZeros64(m))
		base := w.now &^ (uint64(1)<<(shift+slotBits) - 1)
		return max(base|s<<shift, w.now+1), true
	}
	if w.nodes[w.overflow].next != w.overflow {
		return w.overflowEvent(), true
	}
	return 0, false
}

// overflowEvent is the first tick at which the earliest overflow entry comes
// within the top level's reach.
func (w *Wheel[K, V]) overflowEvent() uint64 {
	span := uint(slotBits * w.levels)
	return max(w.overflowMin>>span<<span, w.now+1)
}

// expiry is the first tick whose start is at or after deadline d, the
// earliest tick on which the entry may fire without firing early.
func (w *Wheel[K, V]) expiry(d int64) uint64 {
	if d <= 0 {
		return 0
	}
	e := d / w.tick
	if d%w.tick != 0 {
		e++
	}
	return uint64(e)
}

func (w *Wheel[K, V]) tickTime(t uint64) time.Time {
	if t > uint64(math.MaxInt64/w.tick) {
		return w.origin.Add(math.MaxInt64)
	}
	return w.origin.Add(time.Duration(int64(t) * w.tick))
}

// Intrusive circular lists with sentinels: unlinking needs no knowledge of
// the list, which is what makes Cancel O(1).

func (w *Wheel[K, V]) pushBack(head, i uint32) {
	tail := w.nodes[head].prev
	w.nodes[i].prev = tail
	w.nodes[i].next = head
	w.nodes[tail].next = i
	w.nodes[head].prev = i
}

func (w *Wheel[K, V]) unlinkRaw(i uint32) {
	n := &w.nodes[i]
	w.nodes[n.prev].next = n.next
	w.nodes[n.next].prev = n.prev
	n.next, n.prev = i, i
}

// splice moves all of list from onto the end of list to.
func (w *Wheel[K, V]) splice(from, to uint32) {
	first := w.nodes[from].next
	if first == from {
		return
	}
	last := w.nodes[from].prev
	tail := w.nodes[to].prev
	w.nodes[tail].next = first
	w.nodes[first].prev = tail
	w.nodes[last].next = to
	w.nodes[to].prev = last
	w.nodes[from].next, w.nodes[from].prev = from, from
}

func (w *Wheel[K, V]) alloc() uint32 {
	if i := w.free; i != 0 {
		w.free = w.nodes[i].next
		return i
	}
	w.nodes = append(w.nodes, node[K, V]{})
	return uint32(len(w.nodes) - 1)
}

// release returns node i to the free list, dropping its key and value so the
// wheel does not keep them reachable.
func (w *Wheel[K, V]) release(i uint32) {
	w.nodes[i] = node[K, V]{next: w.free}
	w.free = i
}
