package spool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// taskPages walks the spool file at path with the salvage's page reader and
// returns, per leaf page, the task records it holds.
func taskPages(t *testing.T, path string) (map[uint64][]*Task, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	bf, meta := openBoltFile(f, fi.Size())
	if meta == nil {
		t.Fatal("healthy file has no valid meta page")
	}
	out := map[uint64][]*Task{}
	for id := uint64(2); id < bf.pages; id++ {
		p, h, err := bf.page(id)
		if err != nil || h.flags != pageLeaf {
			continue
		}
		elems, _ := leafElems(p, h.count)
		for _, e := range elems {
			if !taskNoShaped(e.key) || len(e.value) == 0 || e.value[0] != '{' {
				continue
			}
			if task, err := decodeTask(e.value); err == nil && task.TaskNo == string(e.key) {
				out[id] = append(out[id], task)
			}
		}
	}
	return out, bf.pageSize
}

// clone deep-copies a task through its stored form.
func clone(t *testing.T, task *Task) *Task {
	raw, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeTask(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// buildMixedSpool fills the spool at path with n tasks in a mix of states:
// every state a task can rest in, re-targeted and urgent ones, possible
// duplicates, and pruned tombstones. It returns every task as stored.
func buildMixedSpool(t *testing.T, path string, n int, clk *fakeClock) map[string]*Task {
	t.Helper()
	s, err := Open(path, Options{Now: clk.Now, Retention: time.Hour, DedupeWindow: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Accept from several goroutines so group commit keeps this fast.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 16 {
				nt := task(seqName(i), "kitchen")
				nt.Payload = bytes.Repeat([]byte{byte(i)}, 100+i%300)
				if i%10 == 9 {
					nt.Priority = PriorityUrgent
				}
				nt.PossibleDuplicate = i%20 == 6
				if _, _, err := s.Accept(nt); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	batch := func(pick func(i int) bool, path []State, c func(i int) Change) {
		t.Helper()
		var moves []Move
		for i := 0; i < n; i++ {
			if pick(i) {
				cur, err := s.Get(seqName(i))
				if err != nil {
					t.Fatal(err)
				}
				moves = append(moves, Move{TaskNo: seqName(i), From: cur.State, Path: path, Change: c(i)})
			}
		}
		res, err := s.TransitionBatch(moves)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	none := func(int) Change { return Change{} }
	is := func(ks ...int) func(int) bool { return func(i int) bool { return slices.Contains(ks, i%10) } }
	// Ended two hours ago, pruned below: 7 canceled, 8 printed.
	batch(is(7), []State{StateCanceled}, func(int) Change { return Change{Reason: "manager"} })
	batch(is(8), []State{StateQueued, StateSending, StatePrinted}, func(int) Change { return Change{Confirmation: ConfirmPrinted, Attempts: ptr(1)} })
	clk.Advance(2 * time.Hour)
	batch(is(1, 2, 3, 4, 5, 6, 9), []State{StateQueued}, none)
	batch(is(2, 3, 4, 6), []State{StateSending}, func(int) Change { return Change{Attempts: ptr(1)} })
	batch(is(3), []State{StatePrinted}, func(int) Change { return Change{Confirmation: ConfirmConsumed} })
	due := clk.Now().Add(3 * time.Second)
	batch(is(4), []State{StateRetryWait}, func(int) Change { return Change{Reason: "write failed", NextDue: &due} })
	batch(is(5), []State{StateParked}, func(int) Change { return Change{Reason: ReasonDeviceOffline} })
	batch(is(6), []State{StateUnknown, StateHeld}, none)
	batch(is(9), []State{StateQueued}, func(int) Change { return Change{Target: ptr("bar")} })
	if st, err := s.Prune(clk.Now()); err != nil || st.Pruned != n/5 {
		t.Fatalf("prune %+v %v, want %d pruned", st, err, n/5)
	}
	want := map[string]*Task{}
	for i := 0; i < n; i++ {
		got, err := s.Get(seqName(i))
		if err != nil {
			t.Fatal(err)
		}
		want[got.TaskNo] = clone(t, got)
	}
	return want
}

// checkSalvaged asserts the salvaged task is the stored one, except that a
// task found SENDING is re-armed as UNKNOWN with one more timeline entry,
// and that every task's events go on past the next epoch, with one event
// (the re-arm, or one restating its state) numbered there.
func checkSalvaged(t *testing.T, got, want *Task) {
	t.Helper()
	want = clone(t, want)
	want.Events = nextEpoch(want.Events) + 1
	if !want.State.Terminal() {
		// Every unfinished salvaged task may be a stale copy: marked.
		want.PossibleDuplicate, want.Message = true, got.Message
	}
	if want.State == StateSending {
		last := got.Timeline[len(got.Timeline)-1]
		if got.State != StateUnknown || last.State != StateUnknown || last.Reason != reasonSalvaged || got.Events != want.Events {
			t.Errorf("%s was SENDING, salvaged as %s (timeline ends %+v), want UNKNOWN %q", want.TaskNo, got.State, last, reasonSalvaged)
			return
		}
		want.State, want.Reason, want.UpdatedAt = StateUnknown, reasonSalvaged, got.UpdatedAt
		want.Timeline = append(want.Timeline, last)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s salvaged as\n%+v\nwant\n%+v", want.TaskNo, got, want)
	}
}

// TestSalvageCorruptSpool ensures a spool whose file is damaged (leaf pages
// of the tasks bucket overwritten with garbage, and a meta page too) keeps
// every task whose record lived on an undamaged page, with its state,
// timeline, flags and dedupe, in every index (queue order, counts, seq,
// retention); tasks found SENDING come back UNKNOWN; salvaged plus lost
// makes every task; and the damaged pages are counted as unreadable.
func TestSalvageCorruptSpool(t *testing.T) {
	const n = 1000
	path := filepath.Join(t.TempDir(), "spool.db")
	clk := newFakeClock()
	want := buildMixedSpool(t, path, n, clk)

	// One copy of each task on disk, so each lives on one page.
	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	pages, pageSize := taskPages(t, path)
	where := map[string]uint64{}
	var leaves []uint64
	for id, ts := range pages {
		leaves = append(leaves, id)
		for _, task := range ts {
			if _, twice := where[task.TaskNo]; twice {
				t.Fatalf("setup: %s on two pages after Compact", task.TaskNo)
			}
			if !reflect.DeepEqual(task, want[task.TaskNo]) {
				t.Fatalf("setup: page %d holds a stale %s", id, task.TaskNo)
			}
			where[task.TaskNo] = id
		}
	}
	if len(where) != n || len(leaves) < 20 {
		t.Fatalf("setup: %d tasks on %d leaf pages", len(where), len(leaves))
	}

	// Garbage over every seventh leaf page of the tasks, and over meta 0.
	slices.Sort(leaves)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(8, 6))
	garble := func(id uint64) {
		for i := int64(id) * pageSize; i < int64(id+1)*pageSize; i++ {
			raw[i] = byte(rnd.Uint32())
		}
	}
	damaged := map[uint64]bool{}
	for i := 3; i < len(leaves); i += 7 {
		damaged[leaves[i]] = true
		garble(leaves[i])
	}
	garble(0)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	lost := map[string]bool{}
	for no, id := range where {
		if damaged[id] {
			lost[no] = true
		}
	}

	s, err = Open(path, Options{Now: clk.Now, Retention: time.Hour, DedupeWindow: 48 * time.Hour})
	if err != nil {
		t.Fatalf("open damaged spool: %v", err)
	}
	defer s.Close()
	var ce *CorruptError
	if !errors.As(s.Recovered(), &ce) {
		t.Fatalf("Recovered() = %v, want *CorruptError", s.Recovered())
	}
	t.Logf("%d leaf pages, %d damaged, %d tasks lost: %v", len(leaves), len(damaged), len(lost), ce)
	if ce.SalvageErr != nil {
		t.Fatalf("salvage failed: %v", ce.SalvageErr)
	}
	if ce.Salvaged+len(lost) != n {
		t.Errorf("salvaged %d + lost %d != %d", ce.Salvaged, len(lost), n)
	}
	if ce.Unreadable != len(damaged) {
		t.Errorf("unreadable %d, want the %d damaged pages", ce.Unreadable, len(damaged))
	}
	for _, frag := range []string{fmt.Sprintf("%d tasks salvaged", ce.Salvaged), fmt.Sprintf("%d pages or records could not be read", ce.Unreadable), ce.MovedTo} {
		if !bytes.Contains([]byte(ce.Error()), []byte(frag)) {
			t.Errorf("message lacks %q: %s", frag, ce)
		}
	}

	counts := map[State]int{}
	queues := map[string][]*Task{}
	var active, rearmed int
	var maxSeq uint64
	for i := 0; i < n; i++ {
		no := seqName(i)
		got, err := s.Get(no)
		if lost[no] {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s lived on a damaged page yet came back: %v", no, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s lived on an undamaged page: %v", no, err)
			continue
		}
		checkSalvaged(t, got, want[no])
		if _, dup, err := s.Accept(task(no, "kitchen")); err != nil || !dup {
			t.Errorf("resent %s: dup=%v err=%v, want a duplicate", no, dup, err)
		}
		maxSeq = max(maxSeq, got.Seq)
		if !got.Pruned {
			counts[got.State]++
		}
		if !got.State.Terminal() {
			active++
			queues[got.Lane()] = append(queues[got.Lane()], got)
		}
		if want[no].State == StateSending {
			rearmed++
		}
	}
	if ce.Active != active || ce.Rearmed != rearmed || rearmed == 0 {
		t.Errorf("reported %d active, %d re-armed; found %d, %d", ce.Active, ce.Rearmed, active, rearmed)
	}
	if c, _ := s.Counts(); !reflect.DeepEqual(c, counts) {
		t.Errorf("counts %v, want %v", c, counts)
	}
	for lane, ts := range queues {
		slices.SortFunc(ts, func(a, b *Task) int {
			if a.Priority != b.Priority {
				return int(priorityRank(a.Priority)) - int(priorityRank(b.Priority))
			}
			return int(a.Seq) - int(b.Seq)
		})
		q, _ := s.Queue(lane)
		if got, want := taskNos(q), taskNos(ts); !reflect.DeepEqual(got, want) {
			t.Errorf("lane %s queue %v\nwant %v in (priority, seq) order", lane, got, want)
		}
	}
	if lanes, _ := s.Lanes(); len(lanes) != len(queues) {
		t.Errorf("lanes %v", lanes)
	}
	if d, _ := s.OutboxDepth(); d != ce.Salvaged {
		t.Errorf("outbox depth %d, want one event per salvaged task (%d): the outbox is not salvaged, each task's state is restated", d, ce.Salvaged)
	}
	if a := mustAccept(t, s, task("NEW_v1", "kitchen")); a.Seq != maxSeq+1 {
		t.Errorf("new task seq %d, want %d", a.Seq, maxSeq+1)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
	// Retention still knows every salvaged terminal task: after the dedupe
	// window nothing terminal is left.
	clk.Advance(72 * time.Hour)
	if _, err := s.Prune(clk.Now()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if got, err := s.Get(seqName(i)); err == nil && got.State.Terminal() {
			t.Errorf("%s (%s) outlived the dedupe window: done/tombs index not rebuilt", got.TaskNo, got.State)
			break
		}
	}
}

// TestSalvagePrefersLatestCopy ensures that where copy-on-write left older
// copies of task records in freed pages, the salvage keeps each task's
// latest record, even with both meta pages gone (no tree to tell live pages
// from freed ones, page size from the system).
func TestSalvagePrefersLatestCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	clk := newFakeClock()
	want := buildMixedSpool(t, path, 300, clk)
	pages, pageSize := taskPages(t, path)
	stale := 0
	for _, ts := range pages {
		for _, task := range ts {
			if !reflect.DeepEqual(task, want[task.TaskNo]) {
				stale++
			}
		}
	}
	if stale == 0 {
		t.Fatal("setup: no stale copies in the file; the test proves nothing")
	}
	raw, _ := os.ReadFile(path)
	for i := int64(0); i < 2*pageSize; i++ {
		raw[i] = 0xA5
	}
	os.WriteFile(path, raw, 0o600)

	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ce *CorruptError
	if !errors.As(s.Recovered(), &ce) || ce.Salvaged != len(want) || ce.SalvageErr != nil {
		t.Fatalf("Recovered() = %v, want all %d tasks salvaged", s.Recovered(), len(want))
	}
	t.Logf("%d stale copies in freed pages: %v", stale, ce)
	for no, w := range want {
		got, err := s.Get(no)
		if err != nil {
			t.Fatal(err)
		}
		checkSalvaged(t, got, w)
	}
}

// TestSalvageMarksStaleRecord ensures a live task whose salvaged record
// numbers fewer events than its outbox events show (its latest record was
// lost) is marked as a possible duplicate, so a reprint is never silent.
func TestSalvageMarksStaleRecord(t *testing.T) {
	s, clk := openTest(t, Options{})
	now := clk.Now()
	rec := func(no string, st State, events int) *Task {
		return &Task{TaskNo: no, Printer: "k", Priority: PriorityNormal, Origin: OriginLocal, Seq: uint64(len(no)), State: st, Events: events, AcceptedAt: now, UpdatedAt: now}
	}
	found := &salvaged{
		tasks: map[string]*Task{
			"STALE_v1":  rec("STALE_v1", StateQueued, 2),
			"FRESH_v10": rec("FRESH_v10", StateQueued, 2),
			"DONE_v100": rec("DONE_v100", StatePrinted, 2),
		},
		events: map[string]int{"STALE_v1": 3, "FRESH_v10": 2, "DONE_v100": 4},
	}
	var ce CorruptError
	if err := s.restore(found, &ce); err != nil {
		t.Fatal(err)
	}
	if ce.Suspect != 1 {
		t.Errorf("%d suspect, want 1", ce.Suspect)
	}
	for no, wantDup := range map[string]bool{"STALE_v1": true, "FRESH_v10": true, "DONE_v100": false} {
		if got, _ := s.Get(no); got.PossibleDuplicate != wantDup {
			t.Errorf("%s possible duplicate %v, want %v (%q)", no, got.PossibleDuplicate, wantDup, got.Message)
		}
	}
}

// FuzzSalvage ensures the page walker never panics, whatever the bytes,
// and only ever returns task records keyed by their own valid task_no.
func FuzzSalvage(f *testing.F) {
	path := filepath.Join(f.TempDir(), "spool.db")
	s, err := Open(path, Options{})
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, _, err := s.Accept(task(seqName(i), "k")); err != nil {
			f.Fatal(err)
		}
	}
	s.Close()
	healthy, _ := os.ReadFile(path)
	f.Add(healthy)
	f.Add(healthy[:len(healthy)/2])
	f.Add([]byte("hello, this is not a database"))
	f.Add([]byte{})
	for _, seed := range []uint64{1, 2, 3} {
		b := bytes.Clone(healthy)
		rnd := rand.New(rand.NewPCG(seed, 0))
		for i := 0; i < 200; i++ {
			b[rnd.IntN(len(b))] = byte(rnd.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		found := scanFile(bytes.NewReader(b), int64(len(b)))
		for no, task := range found.tasks {
			if task.TaskNo != no || ValidTaskNo(no) != nil || !task.State.Valid() {
				t.Fatalf("salvaged a malformed record %q: %+v", no, task)
			}
		}
	})
}

// outboxByTask reads the whole outbox, by task_no.
func outboxByTask(t *testing.T, s *Spool) map[string][]Event {
	t.Helper()
	evs, err := s.ReadOutbox(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Event{}
	for _, ev := range evs {
		out[ev.TaskNo] = append(out[ev.TaskNo], ev.Event)
	}
	return out
}

// outboxKeys returns every outbox key.
func outboxKeys(t *testing.T, s *Spool) [][]byte {
	t.Helper()
	evs, err := s.ReadOutbox(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([][]byte, len(evs))
	for i, ev := range evs {
		keys[i] = ev.Key
	}
	return keys
}

// TestSalvageKeepsEventNumbering ensures a salvaged task's next events are
// numbered past every event number seen for it, its record's count or the
// outbox keys': the cloud dedupes by (task_no, n), and a
// number it had from the lost record would drop the next event as a
// duplicate. And each salvaged task gets one event with its current state
// (the outbox is not salvaged), so the cloud converges.
func TestSalvageKeepsEventNumbering(t *testing.T) {
	s, clk := openTest(t, Options{})
	now := clk.Now()
	sum := strings.Repeat("ab", 32)
	rec := func(no string, st State, events int, origin Origin) *Task {
		return &Task{TaskNo: no, Printer: "k", Priority: PriorityNormal, Origin: origin, Seq: uint64(len(no)), State: st,
			Reason: "why", Events: events, AcceptedAt: now, UpdatedAt: now, Size: 9, SHA256: sum}
	}
	found := &salvaged{
		tasks: map[string]*Task{
			"STALE_v1":    rec("STALE_v1", StateQueued, 2, OriginLocal),
			"SEND_v10":    rec("SEND_v10", StateSending, 3, OriginLocal),
			"DONE_v100":   rec("DONE_v100", StatePrinted, 4, OriginLocal),
			"CLOUD_v1000": rec("CLOUD_v1000", StateParked, 1, OriginCloud),
		},
		// The outbox showed STALE_v1 at 5: its record lost three transitions.
		events: map[string]int{"STALE_v1": 5, "SEND_v10": 3, "DONE_v100": 4},
	}
	seen := map[string]int{"STALE_v1": 5, "SEND_v10": 3, "DONE_v100": 4, "CLOUD_v1000": 1}
	var ce CorruptError
	if err := s.restore(found, &ce); err != nil {
		t.Fatal(err)
	}
	box := outboxByTask(t, s)
	for no, max := range seen {
		got, err := s.Get(no)
		if err != nil {
			t.Fatal(err)
		}
		evs := box[no]
		if len(evs) != 1 {
			t.Errorf("%s: %d outbox events %+v, want one stating its current state", no, len(evs), evs)
			continue
		}
		ev := evs[0]
		if ev.N <= max || ev.N != got.Events || ev.State != got.State || ev.PossibleDuplicate != got.PossibleDuplicate {
			t.Errorf("%s: event %+v, want n past %d (the task's count %d), state %s, possible_duplicate %v", no, ev, max, got.Events, got.State, got.PossibleDuplicate)
		}
		if wantJob := got.Origin == OriginLocal; (ev.Job != nil) != wantJob || wantJob && (ev.Job.SHA256 != sum || ev.Job.Size != 9) {
			t.Errorf("%s (%s): job summary %+v, want one only for a local task", no, got.Origin, ev.Job)
		}
	}
	if got, _ := s.Get("SEND_v10"); got.State != StateUnknown {
		t.Errorf("SEND_v10 salvaged %s, want UNKNOWN", got.State)
	}

	// The next transition of the stale task is numbered past all of it.
	if err := s.AckOutbox(outboxKeys(t, s)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition("STALE_v1", StateQueued, StateSending, Change{}); err != nil {
		t.Fatal(err)
	}
	if evs := outboxByTask(t, s)["STALE_v1"]; len(evs) != 1 || evs[0].N <= 5 || evs[0].State != StateSending {
		t.Errorf("STALE_v1's next event %+v, want SENDING numbered past 5", evs)
	}
}

// TestSalvageRestatesEveryTask ensures that after a real salvage (both
// meta pages of the file destroyed) the outbox holds exactly one event per
// salvaged task, stating the state the salvage left it in, numbered past
// every event it had before: what the cloud missed with the lost outbox,
// it learns.
func TestSalvageRestatesEveryTask(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	clk := newFakeClock()
	want := buildMixedSpool(t, path, 200, clk)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, pageSize := taskPages(t, path)
	for i := int64(0); i < 2*pageSize; i++ {
		raw[i] = 0x5A
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ce *CorruptError
	if !errors.As(s.Recovered(), &ce) || ce.Salvaged != len(want) {
		t.Fatalf("Recovered() = %v, want all %d tasks salvaged", s.Recovered(), len(want))
	}
	box := outboxByTask(t, s)
	if len(box) != len(want) {
		t.Errorf("outbox has events of %d tasks, want all %d", len(box), len(want))
	}
	for no, w := range want {
		got, err := s.Get(no)
		if err != nil {
			t.Fatal(err)
		}
		evs := box[no]
		if len(evs) != 1 || evs[0].N <= w.Events || evs[0].N != got.Events || evs[0].State != got.State {
			t.Errorf("%s (%s, %d events before): outbox %+v, want one %s event numbered %d, past %d", no, w.State, w.Events, evs, got.State, got.Events, w.Events)
		}
	}
}
