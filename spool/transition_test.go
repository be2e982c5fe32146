package spool

import (
	"errors"
	"reflect"
	"testing"
)

// TestStateTable ensures the table is exactly the state machine of
// docs/DESIGN.md, "States" (plus the documented re-target and pre-send moves): every pair is checked,
// so adding or dropping an edge by accident fails here.
func TestStateTable(t *testing.T) {
	allowed := map[[2]State]bool{}
	add := func(from State, tos ...State) {
		for _, to := range tos {
			allowed[[2]State{from, to}] = true
		}
	}
	nonTerminal := []State{StateAccepted, StateQueued, StateSending, StateRetryWait, StateUnknown, StateHeld, StateParked}
	for _, s := range nonTerminal {
		add(s, StateTimedOut, StateFailed)
	}
	for _, s := range []State{StateAccepted, StateQueued, StateParked, StateRetryWait, StateHeld} {
		add(s, StateCanceled)
	}
	add(StateAccepted, StateQueued, StateParked)
	add(StateQueued, StateQueued, StateSending, StateParked)
	add(StateSending, StatePrinted, StateRetryWait, StateUnknown, StateQueued, StateParked)
	add(StateRetryWait, StateQueued, StateParked)
	add(StateUnknown, StateQueued, StateHeld)
	add(StateHeld, StateQueued)
	add(StateParked, StateQueued, StateParked)
	for _, from := range AllStates {
		for _, to := range AllStates {
			if got, want := CanTransition(from, to), allowed[[2]State{from, to}]; got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
	for _, s := range AllStates {
		if s.Terminal() != (len(transitions[s]) == 0) {
			t.Errorf("%s: Terminal()=%v but has %d outgoing edges", s, s.Terminal(), len(transitions[s]))
		}
	}
}

// TestTransitionRecordsEverything ensures a transition updates the fields it
// is given, appends a timeline entry and an outbox event with the next
// number, and keeps the state counters right.
func TestTransitionRecordsEverything(t *testing.T) {
	s, clk := openTest(t, Options{})
	mustAccept(t, s, task("A_v1", "kitchen"))
	mustMove(t, s, "A_v1", StateQueued, Change{})
	mustMove(t, s, "A_v1", StateSending, Change{})
	clk.Advance(1500)
	due := clk.Now().Add(2e9)
	got := mustMove(t, s, "A_v1", StateRetryWait, Change{Reason: "write failed", Attempts: ptr(1), NextDue: &due})
	if got.Attempts != 1 || !got.NextDue.Equal(due) || got.Reason != "write failed" {
		t.Errorf("retry fields not recorded: %+v", got)
	}
	mustMove(t, s, "A_v1", StateQueued, Change{})
	mustMove(t, s, "A_v1", StateSending, Change{})
	got = mustMove(t, s, "A_v1", StatePrinted, Change{Confirmation: ConfirmConsumed})
	if got.Confirmation != ConfirmConsumed || got.Attempts != 1 {
		t.Errorf("printed: %+v", got)
	}
	var states []State
	for _, e := range got.Timeline {
		states = append(states, e.State)
	}
	want := []State{StateAccepted, StateQueued, StateSending, StateRetryWait, StateQueued, StateSending, StatePrinted}
	if !reflect.DeepEqual(states, want) {
		t.Errorf("timeline %v, want %v", states, want)
	}
	evs, _ := s.ReadOutbox(100)
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i, ev := range evs {
		if ev.N != i+1 || ev.State != want[i] {
			t.Errorf("event %d: n=%d state=%s, want n=%d state=%s", i, ev.N, ev.State, i+1, want[i])
		}
	}
	if evs[len(evs)-1].Confirmation != ConfirmConsumed {
		t.Errorf("printed event lacks confirmation: %+v", evs[len(evs)-1])
	}
	counts, _ := s.Counts()
	if !reflect.DeepEqual(counts, map[State]int{StatePrinted: 1}) {
		t.Errorf("counts %v, want only PRINTED:1", counts)
	}
	if q, _ := s.Queue("kitchen"); len(q) != 0 {
		t.Errorf("printed task still queued: %v", taskNos(q))
	}
}

// TestIllegalTransitionChangesNothing ensures a move outside the table is
// refused with ErrIllegalTransition and leaves task, timeline and outbox as
// they were; so is any move of an unknown task.
func TestIllegalTransitionChangesNothing(t *testing.T) {
	s, _ := openTest(t, Options{})
	mustAccept(t, s, task("A_v1", "kitchen"))
	mustMove(t, s, "A_v1", StateQueued, Change{})
	before, _ := s.Get("A_v1")
	depth, _ := s.OutboxDepth()
	for _, to := range []State{StatePrinted, StateRetryWait, StateUnknown, StateHeld, StateAccepted, "BOGUS"} {
		_, err := s.Transition("A_v1", StateQueued, to, Change{Reason: "x", Attempts: ptr(9)})
		if !errors.Is(err, ErrIllegalTransition) {
			t.Errorf("QUEUED → %s: err %v, want ErrIllegalTransition", to, err)
		}
	}
	after, _ := s.Get("A_v1")
	if !reflect.DeepEqual(before, after) {
		t.Errorf("illegal transitions changed the task:\n%+v\n%+v", before, after)
	}
	if d, _ := s.OutboxDepth(); d != depth {
		t.Errorf("outbox depth %d → %d", depth, d)
	}
	mustMove(t, s, "A_v1", StateCanceled, Change{})
	if _, err := s.Transition("A_v1", StateCanceled, StateQueued, Change{}); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("move out of terminal state: %v", err)
	}
	if _, err := s.Transition("NOPE", StateAccepted, StateQueued, Change{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
}

// TestTransitionIsCompareAndSet ensures a move decided on a stale copy of a
// task (expected state no longer the stored one) is refused with
// ErrStateChanged and changes nothing, in every entry point: a second lane
// holding the same task must never overwrite the first one's decision.
func TestTransitionIsCompareAndSet(t *testing.T) {
	s, _ := openTest(t, Options{})
	mustAccept(t, s, task("A_v1", "k"))
	if _, err := s.TransitionPath("A_v1", StateAccepted, []State{StateQueued, StateSending}, Change{Attempts: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Get("A_v1")
	depth, _ := s.OutboxDepth()
	// A stale holder still believes the task is ACCEPTED; every move it
	// tries, even one the table allows from SENDING, is refused.
	if _, err := s.TransitionPath("A_v1", StateAccepted, []State{StateQueued, StateSending}, Change{}); !errors.Is(err, ErrStateChanged) {
		t.Errorf("stale path: %v, want ErrStateChanged", err)
	}
	if _, err := s.Transition("A_v1", StateQueued, StateTimedOut, Change{}); !errors.Is(err, ErrStateChanged) {
		t.Errorf("stale single move: %v, want ErrStateChanged", err)
	}
	res, err := s.TransitionBatch([]Move{{TaskNo: "A_v1", From: StateQueued, Path: []State{StateParked}}})
	if err != nil || !errors.Is(res[0].Err, ErrStateChanged) {
		t.Errorf("stale batch move: %v / %v, want ErrStateChanged", err, res[0].Err)
	}
	after, _ := s.Get("A_v1")
	if !reflect.DeepEqual(before, after) {
		t.Errorf("stale moves changed the task:\n%+v\n%+v", before, after)
	}
	if d, _ := s.OutboxDepth(); d != depth {
		t.Errorf("outbox depth %d → %d", depth, d)
	}
	if _, err := s.Transition("A_v1", StateSending, StateUnknown, Change{}); err != nil {
		t.Errorf("move from the stored state: %v", err)
	}
}

// TestRetargetMovesLane ensures a failover re-target moves the task to the
// backup's lane in its queue position and back again on failback.
func TestRetargetMovesLane(t *testing.T) {
	s, _ := openTest(t, Options{})
	for _, no := range []string{"A_v1", "B_v1", "C_v1"} {
		mustAccept(t, s, task(no, "kitchen"))
		mustMove(t, s, no, StateQueued, Change{})
	}
	mustAccept(t, s, task("X_v1", "bar"))
	mustMove(t, s, "A_v1", StateQueued, Change{Target: ptr("bar")})
	mustMove(t, s, "C_v1", StateQueued, Change{Target: ptr("bar")})
	bar, _ := s.Queue("bar")
	if got := taskNos(bar); !reflect.DeepEqual(got, []string{"A_v1", "C_v1", "X_v1"}) {
		t.Errorf("bar lane %v, want moved tasks in seq order with its own", got)
	}
	kitchen, _ := s.Queue("kitchen")
	if got := taskNos(kitchen); !reflect.DeepEqual(got, []string{"B_v1"}) {
		t.Errorf("kitchen lane %v", got)
	}
	a := mustMove(t, s, "A_v1", StateQueued, Change{Target: ptr("kitchen")})
	if a.Target != "" {
		t.Errorf("failback to own printer left target %q", a.Target)
	}
	kitchen, _ = s.Queue("kitchen")
	if got := taskNos(kitchen); !reflect.DeepEqual(got, []string{"A_v1", "B_v1"}) {
		t.Errorf("kitchen lane after failback %v", got)
	}
	c, _ := s.Get("C_v1")
	if c.Target != "bar" || c.Timeline[len(c.Timeline)-1].Printer != "bar" {
		t.Errorf("target not recorded: %+v", c)
	}
}

// TestTransitionPath ensures a path of transitions is recorded step by step
// (timeline entries and outbox events for each state) in one transaction,
// and that a path with an illegal step changes nothing.
func TestTransitionPath(t *testing.T) {
	s, _ := openTest(t, Options{})
	mustAccept(t, s, task("A_v1", "k"))
	got, err := s.TransitionPath("A_v1", StateAccepted, []State{StateQueued, StateSending}, Change{Attempts: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateSending || got.Attempts != 1 || len(got.Timeline) != 3 || got.Timeline[1].State != StateQueued {
		t.Errorf("after path: %+v", got)
	}
	evs, _ := s.ReadOutbox(10)
	if len(evs) != 3 || evs[1].State != StateQueued || evs[1].N != 2 || evs[2].State != StateSending || evs[2].N != 3 {
		t.Errorf("events %+v", evs)
	}
	if c, _ := s.Counts(); !reflect.DeepEqual(c, map[State]int{StateSending: 1}) {
		t.Errorf("counts %v", c)
	}
	before, _ := s.Get("A_v1")
	if _, err := s.TransitionPath("A_v1", StateSending, []State{StatePrinted, StateQueued}, Change{}); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("illegal second step: %v", err)
	}
	after, _ := s.Get("A_v1")
	if !reflect.DeepEqual(before, after) {
		t.Error("a path with an illegal step changed the task")
	}
}

// TestTransitionBatch ensures a batch applies every legal move in one
// transaction, records each like a single transition, and refuses illegal,
// unknown and repeated moves without affecting the rest.
func TestTransitionBatch(t *testing.T) {
	s, _ := openTest(t, Options{})
	for _, no := range []string{"A_v1", "B_v1", "C_v1"} {
		mustAccept(t, s, task(no, "k"))
		mustMove(t, s, no, StateQueued, Change{})
	}
	mustMove(t, s, "C_v1", StateCanceled, Change{})
	res, err := s.TransitionBatch([]Move{
		{TaskNo: "A_v1", From: StateQueued, Path: []State{StateParked}, Change: Change{Reason: ReasonDeviceOffline}},
		{TaskNo: "C_v1", From: StateCanceled, Path: []State{StateParked}},
		{TaskNo: "NOPE", From: StateQueued, Path: []State{StateParked}},
		{TaskNo: "B_v1", From: StateQueued, Path: []State{StateParked}},
		{TaskNo: "B_v1", From: StateQueued, Path: []State{StateQueued}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[0].Task.State != StateParked || res[0].Task.Reason != ReasonDeviceOffline {
		t.Errorf("A: %+v", res[0])
	}
	if !errors.Is(res[1].Err, ErrIllegalTransition) || !errors.Is(res[2].Err, ErrNotFound) || !errors.Is(res[4].Err, ErrIllegalTransition) {
		t.Errorf("refusals: %v / %v / %v", res[1].Err, res[2].Err, res[4].Err)
	}
	if res[3].Err != nil || res[3].Task.State != StateParked {
		t.Errorf("B: %+v", res[3])
	}
	if c, _ := s.Counts(); !reflect.DeepEqual(c, map[State]int{StateParked: 2, StateCanceled: 1}) {
		t.Errorf("counts %v", c)
	}
	a, _ := s.Get("A_v1")
	if len(a.Timeline) != 3 || a.Events != 3 {
		t.Errorf("A recorded %d timeline entries and %d events, want 3", len(a.Timeline), a.Events)
	}
}
