package wheel

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// levelOf returns the level holding key, len(levels) for the overflow list,
// or -1 when the entry is due (ready or firing) or absent.
func (w *Wheel[K, V]) levelOf(key K) int {
	_, _, i := w.find(key)
	if i == 0 {
		return -1
	}
	e := w.expiry(w.nodes[i].deadline)
	if e <= w.now {
		return -1
	}
	return min((bits.Len64(e^w.now)-1)/slotBits, w.levels)
}

// checkInvariants verifies the bookkeeping that unlink and nextEvent rely on:
// every list is well linked, bitmap bits match occupied slots, every entry in
// a slot is in the slot its deadline selects, and the index finds each entry.
func (w *Wheel[K, V]) checkInvariants(t fataler) {
	t.Helper()
	seen := 0
	for head := uint32(0); head <= w.firing; head++ {
		n := 0
		for i := w.nodes[head].next; i != head; i = w.nodes[i].next {
			if w.nodes[w.nodes[i].next].prev != i {
				t.Fatalf("list %d: broken back link at %d", head, i)
			}
			if _, _, j := w.find(w.nodes[i].key); j != i {
				t.Fatalf("list %d: node %d not found by its key", head, i)
			}
			e := w.expiry(w.nodes[i].deadline)
			if head == w.overflow && (e <= w.now || (bits.Len64(e^w.now)-1)/slotBits < w.levels) {
				t.Fatalf("node %d (tick %d) in overflow at now %d", i, e, w.now)
			}
			if head < w.overflow {
				l, s := int(head)/numSlots, uint64(head)%numSlots
				if e <= w.now || (bits.Len64(e^w.now)-1)/slotBits != l || (e>>(slotBits*l))&slotMask != s {
					t.Fatalf("node %d (tick %d) in level %d slot %d at now %d", i, e, l, s, w.now)
				}
			}
			n++
		}
		if head < w.overflow {
			l, s := int(head)/numSlots, head%numSlots
			if (w.bitmap[l]&(1<<s) != 0) != (n > 0) {
				t.Fatalf("level %d slot %d: bitmap %v, %d entries", l, s, w.bitmap[l]&(1<<s) != 0, n)
			}
		}
		seen += n
	}
	if seen != w.count {
		t.Fatalf("lists hold %d entries, index %d", seen, w.count)
	}
}

// fataler is the part of testing.T and rapid.T that checkInvariants uses.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

type fired struct {
	key int
	at  time.Time
}

// drive advances w to each time Next reports until the wheel is empty or
// limit is reached, and returns what fired and when.
func drive(t *testing.T, w *Wheel[int, time.Time], limit time.Time) []fired {
	t.Helper()
	var out []fired
	for {
		next, ok := w.Next()
		if !ok || next.After(limit) {
			return out
		}
		w.Advance(next, func(k int, _ time.Time) { out = append(out, fired{k, next}) })
	}
}

// TestSevenDayDeadlineCascades ensures a 7-day entry starts in a coarse level,
// passes through every finer level as the wheel reaches its slots, and fires
// within one tick of its deadline, never before.
func TestSevenDayDeadlineCascades(t *testing.T) {
	w := New[int, time.Time](epoch, 0)
	deadline := epoch.Add(7*24*time.Hour + 3*time.Hour + 17*time.Minute + 9*time.Second + 4567*time.Microsecond)
	w.Add(1, deadline, deadline)
	visited := []int{w.levelOf(1)}
	if visited[0] != 4 {
		t.Fatalf("7-day entry placed at level %d, want 4", visited[0])
	}
	var got []fired
	for len(got) == 0 {
		next, ok := w.Next()
		if !ok {
			t.Fatal("wheel lost the entry")
		}
		w.Advance(next, func(k int, _ time.Time) { got = append(got, fired{k, next}) })
		if l := w.levelOf(1); l >= 0 && l != visited[len(visited)-1] {
			visited = append(visited, l)
		}
		w.checkInvariants(t)
	}
	if !slices.Equal(visited, []int{4, 3, 2, 1, 0}) {
		t.Errorf("levels visited %v, want [4 3 2 1 0]", visited)
	}
	if w.steps > 5 {
		t.Errorf("took %d stops to fire one entry, want one per level", w.steps)
	}
	if at := got[0].at; at.Before(deadline) || !at.Before(deadline.Add(w.Tick())) {
		t.Errorf("fired at %v, deadline %v: want within [deadline, deadline+tick)", at, deadline)
	}
}

// TestReAddDueInCurrentSlot ensures that re-adding a key whose entry sits in
// the slot about to fire, or in the batch being delivered, replaces it rather
// than losing either entry: the classic lost-task bug.
func TestReAddDueInCurrentSlot(t *testing.T) {
	tick := 10 * time.Millisecond
	w := New[int, time.Time](epoch, tick)
	d := epoch.Add(35 * time.Millisecond)
	w.Add(1, d, d)
	w.Add(2, d, d)
	w.Add(3, d, d)

	// Before the tick: move key 2 later within the same slot's tick.
	later := d.Add(4 * time.Millisecond)
	w.Add(2, later, later)
	if w.Len() != 3 {
		t.Fatalf("Len %d after re-add, want 3", w.Len())
	}

	// During delivery: key 1's callback re-adds key 3 (same batch, not yet
	// delivered) for later, and re-adds itself for a deadline already due.
	var got []int
	now := epoch.Add(40 * time.Millisecond)
	n := w.Advance(now, func(k int, _ time.Time) {
		got = append(got, k)
		if k == 1 {
			w.Add(3, now.Add(time.Second), now)
			w.Add(1, now, now)
		}
	})
	if n != 2 || !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("first tick fired %v (n=%d), want [1 2]", got, n)
	}
	w.checkInvariants(t)
	if w.Len() != 2 {
		t.Fatalf("Len %d, want 2 (keys 1 and 3 re-added)", w.Len())
	}
	got = got[:0]
	w.Advance(now, func(k int, _ time.Time) { got = append(got, k) })
	if !slices.Equal(got, []int{1}) {
		t.Fatalf("next Advance fired %v, want the re-added due key [1]", got)
	}
	rest := drive(t, w, epoch.Add(time.Hour))
	if len(rest) != 1 || rest[0].key != 3 || rest[0].at.Before(now.Add(time.Second)) {
		t.Fatalf("re-added key 3 fired as %v, want once at or after %v", rest, now.Add(time.Second))
	}
}

// TestCancel ensures Cancel removes pending entries and reports false for
// keys that fired, were cancelled already, or never existed.
func TestCancel(t *testing.T) {
	w := New[string, int](epoch, 0)
	w.Add("a", epoch.Add(time.Second), 1)
	w.Add("b", epoch.Add(time.Hour), 2)
	w.Add("c", epoch.Add(40*24*time.Hour), 3) // overflow list
	var got []string
	w.Advance(epoch.Add(2*time.Second), func(k string, _ int) { got = append(got, k) })
	if !slices.Equal(got, []string{"a"}) {
		t.Fatalf("fired %v, want [a]", got)
	}
	if w.Cancel("a") {
		t.Error("Cancel of a fired key returned true")
	}
	if !w.Cancel("b") || w.Cancel("b") {
		t.Error("Cancel of pending b: want true then false")
	}
	if !w.Cancel("c") {
		t.Error("Cancel of an overflow entry returned false")
	}
	if w.Cancel("never") {
		t.Error("Cancel of an unknown key returned true")
	}
	if w.Len() != 0 {
		t.Errorf("Len %d, want 0", w.Len())
	}
	if _, ok := w.Next(); ok {
		t.Error("Next reports work on an empty wheel")
	}
	w.checkInvariants(t)
	if n := w.Advance(epoch.Add(100*24*time.Hour), func(string, int) { t.Error("cancelled entry fired") }); n != 0 {
		t.Errorf("Advance fired %d", n)
	}
}

// TestMillionEntriesFireOnce ensures a million entries spread over two hours
// each fire exactly once, never early and within one tick when the wheel is
// driven by Next.
func TestMillionEntriesFireOnce(t *testing.T) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	w := New[int, time.Time](epoch, 0)
	deadlines := make([]time.Time, n)
	for i := range deadlines {
		deadlines[i] = epoch.Add(time.Duration(rng.Int64N(int64(2 * time.Hour))))
		w.Add(i, deadlines[i], deadlines[i])
	}
	if w.Len() != n {
		t.Fatalf("Len %d, want %d", w.Len(), n)
	}
	count := make([]uint8, n)
	var prev time.Time
	total := 0
	for {
		next, ok := w.Next()
		if !ok {
			break
		}
		w.Advance(next, func(k int, d time.Time) {
			count[k]++
			total++
			if next.Before(d) || !next.Before(d.Add(w.Tick())) {
				t.Fatalf("key %d deadline %v fired at %v", k, d, next)
			}
			if d.Before(prev) {
				t.Fatalf("key %d deadline %v fired after deadline %v", k, d, prev)
			}
			prev = d
		})
	}
	for k, c := range count {
		if c != 1 {
			t.Fatalf("key %d fired %d times", k, c)
		}
	}
	if total != n || w.Len() != 0 {
		t.Fatalf("fired %d of %d, %d left", total, n, w.Len())
	}
}

// TestLargeJumpFiresAllInOrder ensures one Advance across 60 days fires every
// entry in deadline order, cascading entries already past due straight to
// delivery, and stops only at occupied slots rather than at every tick.
func TestLargeJumpFiresAllInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := New[int, time.Time](epoch, 0)
	const n = 5000
	for i := range n {
		d := epoch.Add(time.Duration(rng.Int64N(int64(45 * 24 * time.Hour))))
		w.Add(i, d, d)
	}
	now := epoch.Add(60 * 24 * time.Hour)
	var prev time.Time
	got := w.Advance(now, func(k int, d time.Time) {
		if d.Before(prev) {
			t.Fatalf("key %d deadline %v after %v", k, d, prev)
		}
		prev = d
	})
	if got != n || w.Len() != 0 {
		t.Fatalf("fired %d of %d, %d left", got, n, w.Len())
	}
	// 60 days is 518M ticks; a stop per occupied slot per level is the most
	// a jump may cost.
	if w.steps > n*w.levels {
		t.Errorf("jump stopped %d times for %d entries", w.steps, n)
	}
	w.checkInvariants(t)
}

// TestBeyondTopLevel ensures deadlines past the top level's span wait in the
// overflow list and still fire within one tick, never early.
func TestBeyondTopLevel(t *testing.T) {
	w := New[int, time.Time](epoch, 0)
	far := []time.Time{
		epoch.Add(365*24*time.Hour + 123*time.Millisecond),
		epoch.Add(200 * 24 * time.Hour),
		epoch.Add(3 * 365 * 24 * time.Hour),
	}
	for i, d := range far {
		w.Add(i, d, d)
		if l := w.levelOf(i); l != w.levels {
			t.Fatalf("deadline %v placed at level %d, want overflow", d, l)
		}
	}
	got := drive(t, w, epoch.Add(4*365*24*time.Hour))
	want := []int{1, 0, 2}
	if len(got) != len(want) {
		t.Fatalf("fired %v, want keys %v", got, want)
	}
	for i, f := range got {
		d := far[f.key]
		if f.key != want[i] || f.at.Before(d) || !f.at.Before(d.Add(w.Tick())) {
			t.Errorf("fire %d: key %d at %v (deadline %v), want key %d within a tick", i, f.key, f.at, d, want[i])
		}
	}
}

// TestDueOrdering ensures entries fire by deadline, then by insertion among
// equal deadlines, also within one tick and across levels.
func TestDueOrdering(t *testing.T) {
	w := New[int, time.Time](epoch, 10*time.Millisecond)
	d := epoch.Add(5*time.Minute + 5*time.Millisecond)
	w.Add(1, d, d)                          // far: level 2 when added
	w.Add(2, d.Add(-4*time.Millisecond), d) // same tick, earlier deadline
	w.Advance(d.Add(-time.Second), func(int, time.Time) { t.Fatal("fired early") })
	w.Add(3, d, d)                   // same deadline, added later, placed low
	w.Add(4, d.Add(-time.Second), d) // already due
	var got []int
	w.Advance(d.Add(time.Minute), func(k int, _ time.Time) { got = append(got, k) })
	if want := []int{4, 2, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("fired %v, want %v", got, want)
	}
}

// TestNeverEarly ensures an entry whose deadline is inside a tick waits for
// the next tick boundary, and a past deadline fires on the next Advance even
// without time moving.
func TestNeverEarly(t *testing.T) {
	w := New[int, int](epoch, 10*time.Millisecond)
	w.Add(1, epoch.Add(15*time.Millisecond), 0)
	if n := w.Advance(epoch.Add(19*time.Millisecond), func(int, int) {}); n != 0 {
		t.Fatal("fired before the tick boundary after its deadline")
	}
	if next, _ := w.Next(); !next.Equal(epoch.Add(20 * time.Millisecond)) {
		t.Fatalf("Next %v, want 20ms", next)
	}
	if n := w.Advance(epoch.Add(20*time.Millisecond), func(int, int) {}); n != 1 {
		t.Fatal("did not fire at the first tick boundary after its deadline")
	}
	w.Add(2, epoch, 0)
	if next, _ := w.Next(); !next.Equal(epoch.Add(20 * time.Millisecond)) {
		t.Fatalf("Next with a due entry %v, want the current tick", next)
	}
	if n := w.Advance(epoch.Add(20*time.Millisecond), func(int, int) {}); n != 1 {
		t.Fatal("past deadline did not fire on the next Advance")
	}
	// Going back is ignored rather than re-firing or corrupting slots.
	w.Add(3, epoch.Add(time.Second), 0)
	if n := w.Advance(epoch, func(int, int) {}); n != 0 {
		t.Fatal("backward Advance fired")
	}
	w.checkInvariants(t)
	if n := w.Advance(epoch.Add(time.Second), func(int, int) {}); n != 1 {
		t.Fatal("entry lost after backward Advance")
	}
}

// TestAdvanceFromCallbackPanics ensures the one forbidden re-entry is loud.
func TestAdvanceFromCallbackPanics(t *testing.T) {
	w := New[int, int](epoch, 0)
	w.Add(1, epoch, 0)
	defer func() {
		if recover() == nil {
			t.Error("Advance from a callback did not panic")
		}
	}()
	w.Advance(epoch, func(int, int) { w.Advance(epoch, func(int, int) {}) })
}

// TestSteadyStateAllocs ensures Add, re-Add, Cancel and delivery allocate
// nothing once the slab and index have grown.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	w := New[uint64, uint64](epoch, 0)
	for i := range uint64(1000) {
		w.Add(i, epoch.Add(time.Hour), i)
	}
	k := uint64(1000)
	now := epoch
	fn := func(uint64, uint64) {}
	allocs := testing.AllocsPerRun(1000, func() {
		w.Add(k, now.Add(time.Duration(k%97)*time.Second), k)
		w.Add(k, now.Add(time.Duration(k%89)*time.Millisecond), k)
		w.Cancel(k - 1000)
		now = now.Add(10 * time.Millisecond)
		w.Advance(now, fn)
		k++
	})
	if allocs != 0 {
		t.Errorf("%v allocs per Add/re-Add/Cancel/Advance, want 0", allocs)
	}
}

// TestIndexChurn ensures the key index keeps finding every key through many
// inserts and deletes that collide and wrap around the table.
func TestIndexChurn(t *testing.T) {
	w := New[int, int](epoch, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	live := map[int]bool{}
	for range 200_000 {
		k := rng.IntN(3000)
		if rng.IntN(2) == 0 {
			w.Add(k, epoch.Add(time.Hour), k)
			live[k] = true
		} else if got := w.Cancel(k); got != live[k] {
			t.Fatalf("Cancel(%d) = %v, want %v", k, got, live[k])
		} else {
			delete(live, k)
		}
	}
	if w.Len() != len(live) {
		t.Fatalf("Len %d, want %d", w.Len(), len(live))
	}
	for k := range live {
		if _, ok := w.Deadline(k); !ok {
			t.Fatalf("live key %d not found", k)
		}
	}
	w.checkInvariants(t)
}
