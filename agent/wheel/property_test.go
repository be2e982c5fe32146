package wheel

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// model is the obviously-correct scheduler the wheel must agree with: a list
// of pending entries, sorted when asked what is due.
type model struct {
	tick    time.Duration
	entries map[int]modelEntry
	seq     int
}

type modelEntry struct {
	deadline time.Time
	seq      int
}

// dueAt is when an entry may fire: the first tick boundary at or after its
// deadline, counted from epoch.
func (m *model) dueAt(d time.Time) time.Time {
	off := max(d.Sub(epoch), 0)
	ticks := (off + m.tick - 1) / m.tick
	return epoch.Add(ticks * m.tick)
}

func (m *model) advance(now time.Time) []int {
	var due []int
	for k, e := range m.entries {
		if !m.dueAt(e.deadline).After(now) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b int) int {
		ea, eb := m.entries[a], m.entries[b]
		if c := ea.deadline.Compare(eb.deadline); c != 0 {
			return c
		}
		return cmp.Compare(ea.seq, eb.seq)
	})
	for _, k := range due {
		delete(m.entries, k)
	}
	return due
}

// TestWheelMatchesModel runs random sequences of Add, re-Add, Cancel and
// Advance, at scales from sub-tick to beyond the top level, and checks that
// the wheel fires the same entries as the model, in the same order (deadline,
// then insertion), none early and none more than one tick late, and that Next
// never promises a wake later than the earliest firing.
func TestWheelMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tick := rapid.SampledFrom([]time.Duration{time.Millisecond, 10 * time.Millisecond, time.Second}).Draw(rt, "tick")
		w := New[int, time.Time](epoch, tick)
		m := &model{tick: tick, entries: map[int]modelEntry{}}
		now := epoch
		// Scales make deadlines land in every level and the overflow list;
		// a small key space makes re-adds and cancels hit live keys.
		scales := []time.Duration{time.Millisecond, 50 * time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour, 40 * 24 * time.Hour}
		deadlineGen := rapid.Custom(func(rt *rapid.T) time.Time {
			if rapid.IntRange(0, 5).Draw(rt, "reuse") == 0 && len(m.entries) > 0 {
				keys := make([]int, 0, len(m.entries))
				for k := range m.entries {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				return m.entries[rapid.SampledFrom(keys).Draw(rt, "tie")].deadline
			}
			scale := rapid.SampledFrom(scales).Draw(rt, "scale")
			n := rapid.Int64Range(-3, 200).Draw(rt, "n")
			return now.Add(time.Duration(n) * scale)
		})
		ops := rapid.IntRange(1, 200).Draw(rt, "ops")
		for range ops {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3:
				k := rapid.IntRange(0, 30).Draw(rt, "key")
				d := deadlineGen.Draw(rt, "deadline")
				w.Add(k, d, d)
				m.entries[k] = modelEntry{d, m.seq}
				m.seq++
			case 4, 5:
				k := rapid.IntRange(0, 30).Draw(rt, "key")
				_, live := m.entries[k]
				if got := w.Cancel(k); got != live {
					rt.Fatalf("Cancel(%d) = %v, model says %v", k, got, live)
				}
				delete(m.entries, k)
			default:
				scale := rapid.SampledFrom(scales).Draw(rt, "step scale")
				step := time.Duration(rapid.Int64Range(0, 100).Draw(rt, "step")) * scale
				if rapid.IntRange(0, 3).Draw(rt, "to next") == 0 {
					if next, ok := w.Next(); ok && next.After(now) {
						step = next.Sub(now)
					}
				}
				now = now.Add(step)
				var got []int
				w.Advance(now, func(k int, d time.Time) {
					if d.After(now) {
						rt.Fatalf("key %d fired early: deadline %v, now %v", k, d, now)
					}
					got = append(got, k)
				})
				want := m.advance(now)
				if !slices.Equal(got, want) {
					rt.Fatalf("Advance(%v) fired %v, model %v", now.Sub(epoch), got, want)
				}
				for k, e := range m.entries {
					if !e.deadline.After(now.Add(-tick)) {
						rt.Fatalf("key %d more than a tick late: deadline %v, now %v", k, e.deadline, now)
					}
				}
			}
			if w.Len() != len(m.entries) {
				rt.Fatalf("Len %d, model %d", w.Len(), len(m.entries))
			}
			next, ok := w.Next()
			if ok != (len(m.entries) > 0) {
				rt.Fatalf("Next ok=%v with %d entries", ok, len(m.entries))
			}
			for k, e := range m.entries {
				if next.After(m.dueAt(e.deadline)) && next.After(now) {
					rt.Fatalf("Next %v is after key %d's firing time %v", next, k, m.dueAt(e.deadline))
				}
			}
		}
		w.checkInvariants(rt)
	})
}
