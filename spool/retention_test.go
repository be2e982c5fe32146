package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestPruneKeepsDedupeTombstone ensures retention drops a terminal task's
// body after Retention while its task_no is still refused until DedupeWindow
// ends, after which it may be accepted again. Live tasks are never pruned.
func TestPruneKeepsDedupeTombstone(t *testing.T) {
	s, clk := openTest(t, Options{Retention: 24 * time.Hour, DedupeWindow: 72 * time.Hour})
	mustAccept(t, s, task("OLD_v1", "k"))
	mustMove(t, s, "OLD_v1", StateCanceled, Change{})
	mustAccept(t, s, task("LIVE_v1", "k"))
	clk.Advance(25 * time.Hour)
	st, err := s.Prune(clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Pruned != 1 || st.Expired != 0 {
		t.Errorf("prune stats %+v, want 1 pruned", st)
	}
	old, err := s.Get("OLD_v1")
	if err != nil {
		t.Fatal(err)
	}
	if !old.Pruned || old.Payload != nil || old.Timeline != nil || old.State != StateCanceled {
		t.Errorf("tombstone %+v", old)
	}
	if _, dup, err := s.Accept(task("OLD_v1", "k")); err != nil || !dup {
		t.Errorf("within dedupe window: dup=%v err=%v, want duplicate", dup, err)
	}
	if live, _ := s.Get("LIVE_v1"); live.Pruned || live.Payload == nil {
		t.Errorf("live task pruned: %+v", live)
	}
	if _, err := s.Transition("OLD_v1", StateCanceled, StateQueued, Change{}); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("transition of tombstone: %v", err)
	}
	if p, _ := s.List(ListOptions{}); len(p.Tasks) != 1 {
		t.Errorf("list shows %v, want only the live task", taskNos(p.Tasks))
	}
	if c, _ := s.Counts(); c[StateCanceled] != 0 || c[StateAccepted] != 1 {
		t.Errorf("counts %v", c)
	}
	clk.Advance(48 * time.Hour)
	st, _ = s.Prune(clk.Now())
	if st.Expired != 1 {
		t.Errorf("second prune %+v, want 1 expired", st)
	}
	if _, err := s.Get("OLD_v1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired tombstone still there: %v", err)
	}
	if _, dup, err := s.Accept(task("OLD_v1", "k")); err != nil || dup {
		t.Errorf("after dedupe window: dup=%v err=%v, want a new accept", dup, err)
	}
}

// TestCompactShrinksFile ensures Compact returns freed space to the disk and
// keeps every remaining task intact and usable.
func TestCompactShrinksFile(t *testing.T) {
	s, clk := openTest(t, Options{Retention: time.Hour, DedupeWindow: 24 * time.Hour})
	body := make([]byte, 4096)
	for i := 0; i < 1500; i++ {
		nt := task(seqName(i), "k")
		nt.Payload = body
		mustAccept(t, s, nt)
		if i >= 10 {
			mustMove(t, s, seqName(i), StateCanceled, Change{})
		}
	}
	clk.Advance(2 * time.Hour)
	if _, err := s.Prune(clk.Now()); err != nil {
		t.Fatal(err)
	}
	st, err := s.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if st.After*3 > st.Before {
		t.Errorf("compact %d → %d bytes; want at least 3x smaller", st.Before, st.After)
	}
	if fi, _ := os.Stat(s.Path()); fi.Size() != st.After {
		t.Errorf("file is %d bytes, stats say %d", fi.Size(), st.After)
	}
	q, _ := s.Queue("k")
	if len(q) != 10 || len(q[9].Payload) != 4096 {
		t.Fatalf("after compact the lane has %d tasks", len(q))
	}
	mustMove(t, s, seqName(0), StateQueued, Change{})
	if _, dup, _ := s.Accept(task(seqName(500), "k")); !dup {
		t.Error("tombstone lost in compaction")
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

// steppedClock is a wall clock a test can step, with the elapsed time the
// spool measures retention on kept apart, as the monotonic clock is.
type steppedClock struct {
	wall    *fakeClock
	elapsed time.Duration
}

func (c *steppedClock) run(d time.Duration)  { c.wall.Advance(d); c.elapsed += d }
func (c *steppedClock) step(d time.Duration) { c.wall.Advance(d) }

// TestClockStepCannotShortenRetention ensures a ticket that ended while
// the wall clock ran two years behind (a flat CMOS battery) keeps its body
// for Retention and its task_no for DedupeWindow after NTP steps the clock
// forward, in the run that saw the step and after a restart; and that a
// backward step between runs never takes retention back.
func TestClockStepCannotShortenRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	clk := &steppedClock{wall: newFakeClock()}
	clk.step(-2 * 365 * 24 * time.Hour)
	opts := Options{Retention: 24 * time.Hour, DedupeWindow: 72 * time.Hour, Now: clk.wall.Now,
		Elapsed: func() time.Duration { return clk.elapsed }}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	mustAccept(t, s, task("BEHIND_v1", "k"))
	mustMove(t, s, "BEHIND_v1", StateCanceled, Change{})
	clk.run(time.Minute)
	clk.step(2 * 365 * 24 * time.Hour) // NTP
	clk.run(time.Minute)
	if st, err := s.Prune(clk.wall.Now()); err != nil || st.Pruned+st.Expired != 0 {
		t.Fatalf("first prune after the step: %+v %v; want nothing pruned two minutes after the ticket ended", st, err)
	}
	reopen := func() {
		t.Helper()
		s.Close()
		if s, err = Open(path, opts); err != nil {
			t.Fatal(err)
		}
		clk.elapsed = 0
	}
	reopen()
	if st, err := s.Prune(clk.wall.Now()); err != nil || st.Pruned+st.Expired != 0 {
		t.Fatalf("prune after a restart: %+v %v; want nothing pruned", st, err)
	}
	if _, dup, err := s.Accept(task("BEHIND_v1", "k")); err != nil || !dup {
		t.Fatalf("resend after the step: dup=%v err=%v, want duplicate", dup, err)
	}
	clk.step(-30 * 24 * time.Hour) // set back a month while down
	reopen()
	clk.run(25 * time.Hour)
	if st, err := s.Prune(clk.wall.Now()); err != nil || st.Pruned != 1 || st.Expired != 0 {
		t.Fatalf("prune after 25 h: %+v %v; want its body pruned, its tombstone kept", st, err)
	}
	clk.run(48 * time.Hour)
	if st, err := s.Prune(clk.wall.Now()); err != nil || st.Expired != 1 {
		t.Fatalf("prune after 73 h: %+v %v; want its tombstone expired", st, err)
	}
	if _, dup, err := s.Accept(task("BEHIND_v1", "k")); err != nil || dup {
		t.Fatalf("after the dedupe window: dup=%v err=%v, want a new task", dup, err)
	}
}

// TestNewLifeOfTaskNo ensures a task_no accepted again once its dedupe
// window is over is told apart on the wire: its events carry its new
// accept seq, and count on past the old life's still in the outbox, so no
// outbox key is reused.
func TestNewLifeOfTaskNo(t *testing.T) {
	s, clk := openTest(t, Options{Retention: time.Hour, DedupeWindow: time.Hour})
	first := mustAccept(t, s, task("AGAIN_v1", "k"))
	mustMove(t, s, "AGAIN_v1", StateCanceled, Change{})
	clk.Advance(2 * time.Hour)
	if st, err := s.Prune(clk.Now()); err != nil || st.Expired != 1 {
		t.Fatalf("prune: %+v %v", st, err)
	}
	second := mustAccept(t, s, task("AGAIN_v1", "k"))
	if second.Seq == first.Seq {
		t.Fatalf("both lives have seq %d", first.Seq)
	}
	evs, err := s.ReadOutbox(10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%d/%d/%s", e.Event.Seq, e.Event.N, e.Event.State))
	}
	want := []string{
		fmt.Sprintf("%d/1/ACCEPTED", first.Seq), fmt.Sprintf("%d/2/CANCELED", first.Seq),
		fmt.Sprintf("%d/3/ACCEPTED", second.Seq),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("outbox %v, want %v", got, want)
	}
}
