package wheel

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// The AddCancel benchmarks hold N entries pending, due between one and two
// hours out so none fires, and each op adds one entry and cancels the oldest:
// the push wheel's steady state of scheduling a retry and cancelling another.
// All three do the same job the agent needs, schedule and cancel by key, so
// the runtime-timer and container/heap baselines keep a Go map from key to
// their handle, as a caller replacing the wheel would have to. Each also
// reports B/entry, the heap growth per pending entry measured with
// runtime.MemStats around building the N entries, index or map included.

var pendingSizes = []int{10_000, 100_000, 1_000_000}

// delays is a ring of random delays shared by all implementations so they
// schedule the same pattern; its size is a power of two for cheap indexing.
var delays = func() []time.Duration {
	rng := rand.New(rand.NewPCG(11, 12))
	d := make([]time.Duration, 1<<12)
	for i := range d {
		d[i] = time.Hour + time.Duration(rng.Int64N(int64(time.Hour)))
	}
	return d
}()

func delay(i int) time.Duration { return delays[i&(len(delays)-1)] }

// heapDelta returns the live-heap growth caused by build, per entry.
func heapDelta(n int, build func()) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

func BenchmarkAddCancel(b *testing.B) {
	for _, impl := range []struct {
		name string
		run  func(b *testing.B, n int)
	}{
		{"wheel", benchWheel},
		{"runtime", benchRuntime},
		{"heap", benchHeap},
	} {
		for _, n := range pendingSizes {
			b.Run(fmt.Sprintf("%s/pending=%d", impl.name, n), func(b *testing.B) { impl.run(b, n) })
		}
	}
}

func benchWheel(b *testing.B, n int) {
	var w *Wheel[uint64, uint64]
	perEntry := heapDelta(n, func() {
		w = New[uint64, uint64](epoch, 0)
		for i := range n {
			w.Add(uint64(i), epoch.Add(delay(i)), uint64(i))
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := n + i
		w.Add(uint64(k), epoch.Add(delay(k)), uint64(k))
		w.Cancel(uint64(i))
	}
	b.StopTimer()
	if w.Len() != n {
		b.Fatalf("Len %d, want %d", w.Len(), n)
	}
	b.ReportMetric(perEntry, "B/entry")
}

func benchRuntime(b *testing.B, n int) {
	fire := func() { panic("benchmark timer fired") }
	var timers map[uint64]*time.Timer
	perEntry := heapDelta(n, func() {
		timers = make(map[uint64]*time.Timer)
		for i := range n {
			timers[uint64(i)] = time.AfterFunc(delay(i), fire)
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := uint64(n + i)
		timers[k] = time.AfterFunc(delay(n+i), fire)
		timers[uint64(i)].Stop()
		delete(timers, uint64(i))
	}
	b.StopTimer()
	for _, t := range timers {
		t.Stop()
	}
	b.ReportMetric(perEntry, "B/entry")
}

// heapItem and timerHeap are the textbook container/heap timer queue. The
// benchmark recycles the cancelled item so the heap, like the wheel, does not
// allocate per op.
type heapItem struct {
	deadline int64
	index    int
	key, val uint64
}

type timerHeap []*heapItem

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	it := x.(*heapItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *timerHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

func benchHeap(b *testing.B, n int) {
	var h timerHeap
	var items map[uint64]*heapItem
	perEntry := heapDelta(n, func() {
		items = make(map[uint64]*heapItem)
		for i := range n {
			it := &heapItem{deadline: int64(delay(i)), key: uint64(i), val: uint64(i)}
			items[it.key] = it
			heap.Push(&h, it)
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := uint64(n + i)
		it := items[uint64(i)]
		delete(items, uint64(i))
		heap.Remove(&h, it.index)
		it.deadline, it.key, it.val = int64(delay(n+i)), k, k
		heap.Push(&h, it)
		items[k] = it
	}
	b.StopTimer()
	if h.Len() != n {
		b.Fatalf("Len %d, want %d", h.Len(), n)
	}
	b.ReportMetric(perEntry, "B/entry")
}
