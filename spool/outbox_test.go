package spool

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestOutboxOrderAndAck ensures events come out in task_no order, then event
// number, whatever order they were written in, and that acknowledged events
// are gone while a repeated acknowledgement is harmless.
func TestOutboxOrderAndAck(t *testing.T) {
	s, _ := openTest(t, Options{})
	mustAccept(t, s, task("B_v1", "k"))
	mustAccept(t, s, task("A_v1", "k"))
	mustAccept(t, s, task("A_v10", "k"))
	mustMove(t, s, "B_v1", StateQueued, Change{})
	mustMove(t, s, "A_v1", StateQueued, Change{})
	mustMove(t, s, "A_v1", StateSending, Change{})
	evs, err := s.ReadOutbox(100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s/%d/%s", e.TaskNo, e.N, e.State))
	}
	want := []string{"A_v1/1/ACCEPTED", "A_v1/2/QUEUED", "A_v1/3/SENDING", "A_v10/1/ACCEPTED", "B_v1/1/ACCEPTED", "B_v1/2/QUEUED"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outbox order %v\nwant %v", got, want)
	}
	first, _ := s.ReadOutbox(2)
	keys := [][]byte{first[0].Key, first[1].Key}
	if err := s.AckOutbox(keys); err != nil {
		t.Fatal(err)
	}
	if err := s.AckOutbox(keys); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.OutboxDepth(); d != 4 {
		t.Errorf("depth %d after acking 2 of 6 twice, want 4", d)
	}
	rest, _ := s.ReadOutbox(100)
	if len(rest) != 4 || rest[0].TaskNo != "A_v1" || rest[0].N != 3 {
		t.Errorf("after ack: %+v", rest)
	}
}

// checkOutboxOrder asserts ReadOutbox returns events in task_no order, then
// by event number, and returns the latest event number seen per task.
func checkOutboxOrder(t *testing.T, s *Spool) (map[string]OutboxEvent, []OutboxEvent) {
	t.Helper()
	evs, err := s.ReadOutbox(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	latest := map[string]OutboxEvent{}
	for i, e := range evs {
		if i > 0 {
			p := evs[i-1]
			if p.TaskNo > e.TaskNo || (p.TaskNo == e.TaskNo && p.N >= e.N) {
				t.Fatalf("outbox out of order: %s/%d before %s/%d", p.TaskNo, p.N, e.TaskNo, e.N)
			}
		}
		latest[e.TaskNo] = e
	}
	return latest, evs
}

// TestOutboxDisabled ensures a spool without a cloud link writes no outbox
// events at all, while tasks still number their history.
func TestOutboxDisabled(t *testing.T) {
	s, _ := openTest(t, Options{Outbox: OutboxOptions{Disabled: true}})
	for _, no := range []string{"A_v1", "B_v1"} {
		mustAccept(t, s, task(no, "k"))
		mustMove(t, s, no, StateQueued, Change{})
	}
	mustMove(t, s, "A_v1", StateSending, Change{})
	a := mustMove(t, s, "A_v1", StatePrinted, Change{Confirmation: ConfirmPrinted})
	if _, err := s.TransitionBatch([]Move{{TaskNo: "B_v1", From: StateQueued, Path: []State{StateParked}}}); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.ReadOutbox(100); len(evs) != 0 {
		t.Errorf("disabled outbox holds %d events", len(evs))
	}
	if st, _ := s.OutboxStats(); st != (OutboxStats{}) {
		t.Errorf("disabled outbox stats %+v, want all zero", st)
	}
	if a.Events != 4 {
		t.Errorf("task numbered %d events, want 4 (one per transition)", a.Events)
	}
}

// TestOutboxCapCompactsFirst ensures writes past MaxEvents never leave the
// outbox over its cap, that an overflow compacts down to the low-water mark
// in one go (not one event per write), and that compaction alone keeps every
// task's latest event, with the job description of its first, and drops
// nothing.
func TestOutboxCapCompactsFirst(t *testing.T) {
	const max = 50
	s, clk := openTest(t, Options{Outbox: OutboxOptions{MaxEvents: max}})
	tasks := []string{"A_v1", "B_v1", "C_v1", "D_v1", "E_v1"}
	written, shrinks := 0, 0
	last := 0
	write := func(no string, to State) {
		t.Helper()
		clk.Advance(time.Second)
		mustMove(t, s, no, to, Change{})
		written++
		d, _ := s.OutboxDepth()
		if d > max {
			t.Fatalf("depth %d over the cap %d after %d writes", d, max, written)
		}
		if d < last {
			shrinks++
			if d != outboxLowWater(max) {
				t.Fatalf("overflow left depth %d, want the low-water mark %d", d, outboxLowWater(max))
			}
		}
		last = d
	}
	for _, no := range tasks {
		mustAccept(t, s, task(no, "k"))
		written++
		last++
	}
	for round := 0; round < 40; round++ {
		for _, no := range tasks {
			write(no, StateQueued)
		}
	}
	// Over the cap at event max+1, then once per max-low+1 events.
	step := max - outboxLowWater(max) + 1
	if want := (written-max-1)/step + 1; shrinks != want {
		t.Errorf("%d compaction passes for %d events, want %d", shrinks, written, want)
	}
	st, _ := s.OutboxStats()
	if st.Dropped != 0 {
		t.Errorf("compaction alone sufficed but %d events were dropped", st.Dropped)
	}
	if st.Depth+st.Compacted != written {
		t.Errorf("depth %d + compacted %d != %d written", st.Depth, st.Compacted, written)
	}
	latest, evs := checkOutboxOrder(t, s)
	if len(evs) != st.Depth {
		t.Errorf("depth counter %d, outbox holds %d", st.Depth, len(evs))
	}
	for _, no := range tasks {
		got, _ := s.Get(no)
		e, ok := latest[no]
		if !ok || e.N != got.Events || e.State != got.State {
			t.Errorf("%s: latest event %+v, want n=%d %s", no, e.Event, got.Events, got.State)
		}
	}
	for i, e := range evs {
		if (i == 0 || evs[i-1].TaskNo != e.TaskNo) && e.Job == nil {
			t.Errorf("%s: first event left is %d, without the job description of the removed first", e.TaskNo, e.N)
		}
	}
}

// TestOutboxCapDropsOldest ensures that when more tasks owe events than the
// cap holds, each task is first compacted to its latest event and only then
// the oldest events are dropped, every drop counted: the tasks left are the
// newest, each with its latest event, and written = depth + compacted +
// dropped.
func TestOutboxCapDropsOldest(t *testing.T) {
	const max = 10
	s, clk := openTest(t, Options{Outbox: OutboxOptions{MaxEvents: max}})
	written := 0
	for i := 0; i < 30; i++ {
		clk.Advance(time.Second)
		mustAccept(t, s, task(seqName(i), "k"))
		mustMove(t, s, seqName(i), StateQueued, Change{})
		written += 2
		if d, _ := s.OutboxDepth(); d > max {
			t.Fatalf("depth %d over the cap %d", d, max)
		}
	}
	st, _ := s.OutboxStats()
	latest, evs := checkOutboxOrder(t, s)
	if len(evs) != st.Depth || st.Depth+st.Compacted+st.Dropped != written {
		t.Fatalf("stats %+v with %d events in the outbox, %d written", st, len(evs), written)
	}
	if st.Dropped != 30-len(latest) || st.Dropped == 0 {
		t.Errorf("dropped %d, want one per task gone from the outbox (%d)", st.Dropped, 30-len(latest))
	}
	for i := 0; i < 30; i++ {
		e, ok := latest[seqName(i)]
		if kept := i >= 30-len(latest); ok != kept {
			t.Errorf("%s kept=%v: the oldest tasks must go first", seqName(i), ok)
		}
		if ok && (e.N != 2 || e.State != StateQueued) {
			t.Errorf("%s kept event %d %s, want its latest (2 QUEUED)", seqName(i), e.N, e.State)
		}
	}
}

// TestTrimOutboxByAge ensures TrimOutbox removes events older than MaxAge,
// counting those a later event of the task supersedes as compacted and a
// task's latest as dropped, keeps fresh ones, and that the counters survive
// a reopen; and that it compacts an outbox over a lowered cap.
func TestTrimOutboxByAge(t *testing.T) {
	opts := Options{Outbox: OutboxOptions{MaxAge: 24 * time.Hour}}
	s, clk := openTest(t, opts)
	mustAccept(t, s, task("A_v1", "k"))
	mustMove(t, s, "A_v1", StateQueued, Change{})
	mustAccept(t, s, task("C_v1", "k"))
	clk.Advance(30 * time.Hour)
	mustAccept(t, s, task("B_v1", "k"))
	mustMove(t, s, "A_v1", StateSending, Change{})
	st, err := s.TrimOutbox(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st != (OutboxStats{Depth: 2, Compacted: 2, Dropped: 1}) {
		t.Errorf("trim %+v, want depth 2, compacted 2 (A/1, A/2), dropped 1 (C/1)", st)
	}
	_, evs := checkOutboxOrder(t, s)
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s/%d", e.TaskNo, e.N))
	}
	if fmt.Sprint(got) != "[A_v1/3 B_v1/1]" {
		t.Errorf("after trim %v, want [A_v1/3 B_v1/1]", got)
	}
	if st, _ := s.TrimOutbox(clk.Now()); st != (OutboxStats{Depth: 2}) {
		t.Errorf("second trim %+v removed something", st)
	}

	path := s.Path()
	s.Close()
	opts.Now = clk.Now
	opts.Outbox.MaxEvents = 1
	s, err = Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, _ := s.OutboxStats(); st != (OutboxStats{Depth: 2, Compacted: 2, Dropped: 1}) {
		t.Errorf("after reopen %+v, counters lost", st)
	}
	if st, _ := s.TrimOutbox(clk.Now()); st != (OutboxStats{Depth: 1, Dropped: 1}) {
		t.Errorf("trim under a lowered cap %+v, want the older event dropped", st)
	}
	if evs, _ := s.ReadOutbox(10); len(evs) != 1 || evs[0].TaskNo != "B_v1" {
		t.Errorf("kept %+v, want the newest event", evs)
	}
}

// TestReadOutboxSkipping ensures the skipping read returns the oldest events
// whose keys are not skipped, in key order, up to n, as ReadOutbox would
// without the skipped ones.
func TestReadOutboxSkipping(t *testing.T) {
	s, _ := openTest(t, Options{})
	for _, no := range []string{"A_v1", "B_v1", "C_v1"} {
		mustAccept(t, s, task(no, "k"))
		mustMove(t, s, no, StateQueued, Change{})
	}
	all, err := s.ReadOutbox(100)
	if err != nil || len(all) != 6 {
		t.Fatalf("outbox %d %v", len(all), err)
	}
	skip := map[string]bool{string(all[0].Key): true, string(all[1].Key): true, string(all[3].Key): true}
	got, err := s.ReadOutboxSkipping(2, func(k []byte) bool { return skip[string(k)] })
	if err != nil || len(got) != 2 || !bytes.Equal(got[0].Key, all[2].Key) || !bytes.Equal(got[1].Key, all[4].Key) || got[1].TaskNo != all[4].TaskNo {
		t.Errorf("skipping read: %+v %v", got, err)
	}
}
