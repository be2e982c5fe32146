package spool

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// printAll moves each task_no to PRINTED, the way a lane would.
func printAll(t *testing.T, s *Spool, nos ...string) {
	t.Helper()
	for _, no := range nos {
		mustMove(t, s, no, StateQueued, Change{})
		mustMove(t, s, no, StateSending, Change{})
		mustMove(t, s, no, StatePrinted, Change{})
	}
}

// TestQuotaFullOfPrintedMakesRoom ensures a door whose quota is full of
// tickets already printed still takes a new one: the oldest printed ticket
// loses its body before retention would drop it, its task_no still counts
// as a duplicate, and tickets not yet printed are never given up.
func TestQuotaFullOfPrintedMakesRoom(t *testing.T) {
	const body = 8 << 10
	quota := 4 * Charge(body)
	s, _ := openTest(t, Options{Retention: 7 * 24 * time.Hour, Quotas: map[Origin]int64{OriginRaw: quota}})
	for i := range 4 {
		mustAccept(t, s, originTask("R"+seqName(i), OriginRaw, body))
	}
	printAll(t, s, "R"+seqName(0), "R"+seqName(1))
	// Two printed, two waiting: the new one takes the oldest printed's room.
	mustAccept(t, s, originTask("R-new1", OriginRaw, body))
	old, err := s.Get("R" + seqName(0))
	if err != nil {
		t.Fatal(err)
	}
	if !old.Pruned || old.Payload != nil {
		t.Fatalf("oldest printed ticket kept its body: pruned=%v, %d bytes", old.Pruned, len(old.Payload))
	}
	if next, _ := s.Get("R" + seqName(1)); next.Pruned {
		t.Fatal("a second printed ticket lost its body though one was enough")
	}
	if _, dup, err := s.Accept(originTask("R"+seqName(0), OriginRaw, body)); err != nil || !dup {
		t.Fatalf("the reclaimed ticket's task_no again: dup=%v err=%v, want a duplicate", dup, err)
	}
	mustAccept(t, s, originTask("R-new2", OriginRaw, body))
	if s.Reclaimed() != 2 {
		t.Fatalf("Reclaimed() = %d, want 2", s.Reclaimed())
	}
	// Now only tickets waiting to print are left: nothing is given up.
	_, _, err = s.Accept(originTask("R-new3", OriginRaw, body))
	var qe *QuotaError
	if !errors.As(err, &qe) {
		t.Fatalf("quota full of unprinted tickets: %v, want a QuotaError", err)
	}
	for _, no := range []string{"R" + seqName(2), "R" + seqName(3), "R-new1", "R-new2"} {
		if tk, err := s.Get(no); err != nil || tk.Pruned {
			t.Fatalf("waiting ticket %s: pruned=%v err=%v", no, tk != nil && tk.Pruned, err)
		}
	}
}

// TestReclaimOnlyOwnDoor ensures a door makes room only from its own
// printed tickets: another door's stay whole for their retention.
func TestReclaimOnlyOwnDoor(t *testing.T) {
	const body = 8 << 10
	quota := 2 * Charge(body)
	s, _ := openTest(t, Options{Quotas: map[Origin]int64{OriginRaw: quota, OriginLocal: 10 * quota}})
	mustAccept(t, s, originTask("L0", OriginLocal, body))
	printAll(t, s, "L0")
	mustAccept(t, s, originTask("R0", OriginRaw, body))
	mustAccept(t, s, originTask("R1", OriginRaw, body))
	if _, _, err := s.Accept(originTask("R2", OriginRaw, body)); !errors.Is(err, ErrFull) {
		t.Fatalf("raw past its quota with only the API's printed tickets: %v, want ErrFull", err)
	}
	if l, _ := s.Get("L0"); l.Pruned {
		t.Fatal("the raw door dropped the API door's printed ticket")
	}
}

// TestMakeRoom ensures a door that checks before it reads (the raw port)
// gets room from its printed tickets.
func TestMakeRoom(t *testing.T) {
	const body = 8 << 10
	quota := 3 * Charge(body)
	s, _ := openTest(t, Options{Quotas: map[Origin]int64{OriginRaw: quota}})
	for i := range 3 {
		mustAccept(t, s, originTask("R"+seqName(i), OriginRaw, body))
	}
	need := 2 * Charge(body)
	if n, err := s.MakeRoom(OriginRaw, need); err != nil || n != 0 {
		t.Fatalf("nothing printed: MakeRoom = %d, %v; want 0", n, err)
	}
	printAll(t, s, "R"+seqName(0), "R"+seqName(1), "R"+seqName(2))
	n, err := s.MakeRoom(OriginRaw, need)
	if err != nil || n != 2 {
		t.Fatalf("MakeRoom = %d, %v; want 2 bodies dropped", n, err)
	}
	if u, _ := s.Origin(OriginRaw); u.Full(need) {
		t.Fatalf("after MakeRoom the raw door has %d of %d used; %d does not fit", u.Used, u.Quota, need)
	}
}

// TestCapFullOfPrintedMakesRoom ensures the spool's cap, too, is kept by
// dropping printed bodies early rather than refusing new tickets: a long
// run of printed tickets, many times the cap, is all accepted, with the
// compaction the agent runs when Fragmented says so (agent.Maintain).
func TestCapFullOfPrintedMakesRoom(t *testing.T) {
	const body = 16 << 10
	const capBytes = 4 << 20
	s, _ := openTest(t, Options{MaxSize: capBytes, Reserve: 256 << 10, MaxTaskBytes: 64 << 10, Retention: 7 * 24 * time.Hour})
	compactions := 0
	for i := range 500 { // ~11 MiB charged in all, 2.7 times the cap
		no := "P" + seqName(i)
		if _, _, err := s.Accept(originTask(no, OriginLocal, body)); err != nil {
			t.Fatalf("ticket %d of a run of printed ones: %v (reclaimed %d)", i, err, s.Reclaimed())
		}
		printAll(t, s, no)
		if s.Fragmented() {
			if _, err := s.Compact(); err != nil {
				t.Fatal(err)
			}
			compactions++
		}
	}
	t.Logf("reclaimed %d, compactions %d", s.Reclaimed(), compactions)
	if s.Reclaimed() == 0 {
		t.Fatal("nothing reclaimed over 2.7 times the cap")
	}
	u, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.Live > capBytes {
		t.Fatalf("live %d bytes over the cap %d", u.Live, capBytes)
	}
}

// TestReclaimTakesPrintedFirst ensures early reclaim never takes the body
// of a ticket that ended without printing while printed ones can give
// room, and not within reclaimGrace at all: a manager's Retry or reprint
// of the order that never came out must still work a minute later. The
// reclaimed ticket says so (Reclaimed), for a reprint's true reason.
func TestReclaimTakesPrintedFirst(t *testing.T) {
	const body = 8 << 10
	quota := 4 * Charge(body)
	s, clk := openTest(t, Options{Retention: 7 * 24 * time.Hour, Quotas: map[Origin]int64{OriginRaw: quota}})
	// The oldest ended first, without printing; the next two printed.
	for i := range 4 {
		mustAccept(t, s, originTask("R"+seqName(i), OriginRaw, body))
	}
	mustMove(t, s, "R"+seqName(0), StateTimedOut, Change{Reason: "BUSY"})
	clk.Advance(time.Minute)
	printAll(t, s, "R"+seqName(1), "R"+seqName(2))
	clk.Advance(time.Minute)
	mustAccept(t, s, originTask("R-new1", OriginRaw, body))
	mustAccept(t, s, originTask("R-new2", OriginRaw, body))
	timedOut, err := s.Get("R" + seqName(0))
	if err != nil {
		t.Fatal(err)
	}
	if timedOut.Pruned || len(timedOut.Payload) != body {
		t.Fatalf("the ticket that never printed lost its body to make room (pruned=%v) while printed ones could give it", timedOut.Pruned)
	}
	for _, no := range []string{"R" + seqName(1), "R" + seqName(2)} {
		if tk, _ := s.Get(no); !tk.Pruned || !tk.Reclaimed {
			t.Fatalf("printed ticket %s: pruned=%v reclaimed=%v, want both", no, tk.Pruned, tk.Reclaimed)
		}
	}
	// No printed ticket left: the unprinted one stays within its grace.
	if _, _, err := s.Accept(originTask("R-new3", OriginRaw, body)); !errors.As(err, new(*QuotaError)) {
		t.Fatalf("quota full of unprinted tickets: %v, want a QuotaError", err)
	}
	if tk, _ := s.Get("R" + seqName(0)); tk.Pruned {
		t.Fatal("the ticket that never printed lost its body within its grace")
	}
	// After the grace it may go.
	clk.Advance(reclaimGrace)
	mustAccept(t, s, originTask("R-new4", OriginRaw, body))
	if tk, _ := s.Get("R" + seqName(0)); !tk.Pruned || !tk.Reclaimed {
		t.Fatalf("after its grace: pruned=%v reclaimed=%v", tk.Pruned, tk.Reclaimed)
	}
}

// TestReclaimBiggestDoorFirst ensures that when the cap (not a quota)
// needs room, the door holding most of the spool loses its own printed
// tickets first, older printed tickets of a smaller door staying whole.
func TestReclaimBiggestDoorFirst(t *testing.T) {
	const body = 8 << 10
	s, _ := openTest(t, Options{Retention: 7 * 24 * time.Hour})
	for i := range 3 {
		mustAccept(t, s, originTask("POS"+seqName(i), OriginLocal, body))
		printAll(t, s, "POS"+seqName(i))
	}
	for i := range 10 {
		mustAccept(t, s, originTask("RAW"+seqName(i), OriginRaw, body))
		printAll(t, s, "RAW"+seqName(i))
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		_, _, err := s.reclaim(tx, "", 3*Charge(body))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if tk, _ := s.Get("POS" + seqName(i)); tk.Pruned {
			t.Errorf("the POS's older printed ticket %d lost its body while the raw door holds most of the spool", i)
		}
		if tk, _ := s.Get("RAW" + seqName(i)); !tk.Pruned {
			t.Errorf("the raw door's printed ticket %d kept its body", i)
		}
	}
}

// TestReclaimGraceSurvivesClockStep holds reclaim's grace for tickets that
// never printed to the retention clock, as their done keys are: a ticket
// that timed out while the PC clock was two years behind keeps its body
// for its grace after NTP steps the clock forward, where a grace measured
// on the wall clock would have found it two years old and reclaimed it.
func TestReclaimGraceSurvivesClockStep(t *testing.T) {
	const body = 8 << 10
	clk := &steppedClock{wall: newFakeClock()}
	clk.step(-2 * 365 * 24 * time.Hour)
	s, err := Open(filepath.Join(t.TempDir(), "spool.db"), Options{Retention: 7 * 24 * time.Hour,
		Quotas: map[Origin]int64{OriginRaw: 2 * Charge(body)}, Now: clk.wall.Now,
		Elapsed: func() time.Duration { return clk.elapsed }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustAccept(t, s, originTask("R-behind", OriginRaw, body))
	mustMove(t, s, "R-behind", StateTimedOut, Change{Reason: "BUSY"})
	clk.run(time.Minute)
	clk.step(2 * 365 * 24 * time.Hour) // NTP
	clk.run(time.Minute)
	mustAccept(t, s, originTask("R-new1", OriginRaw, body))
	if _, _, err := s.Accept(originTask("R-new2", OriginRaw, body)); !errors.As(err, new(*QuotaError)) {
		t.Fatalf("quota full of an unprinted ticket within its grace: %v, want a QuotaError", err)
	}
	if tk, err := s.Get("R-behind"); err != nil || tk.Pruned {
		t.Fatalf("the ticket that never printed lost its body two minutes after it ended (pruned=%v, err %v): the clock step counted as its age", tk.Pruned, err)
	}
}

// TestRoomLackWantsCompaction ensures a door that asks for room before it
// reads a job (the raw port's ready, Room) is never left waiting for good:
// a run of the largest printed tickets, each asked for as the raw port
// asks, fills the file with free pages below Fragmented's own threshold,
// and Room's refusal must ask the maintenance for the compaction that
// gives the room back. Before, the raw port of a 16 MiB spool stopped
// accepting at 85% with the file mostly free, and nothing compacted it.
func TestRoomLackWantsCompaction(t *testing.T) {
	const maxTask = 1 << 20
	const capBytes = 16 << 20
	s, _ := openTest(t, Options{MaxSize: capBytes, MaxTaskBytes: maxTask, Retention: 7 * 24 * time.Hour,
		Quotas: map[Origin]int64{OriginRaw: capBytes / 4}})
	need := Charge(maxTask)
	compactions := 0
	for i := range 40 { // 40 MiB of tickets through a 16 MiB spool
		// The maintenance (agent.Maintain): its periodic look, and at
		// once when the spool asks.
		maintain := func() {
			if s.Fragmented() {
				if _, err := s.Compact(); err != nil {
					t.Fatal(err)
				}
				compactions++
			}
		}
		maintain()
		ok, err := s.Room(need)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			select {
			case <-s.CompactWanted():
				maintain()
			default:
			}
			if ok, err = s.Room(need); err != nil {
				t.Fatal(err)
			}
		}
		if !ok {
			u, _ := s.Usage()
			t.Fatalf("ticket %d: no room for the largest job, and none coming: file %d of intake %d, live %d (%d compactions)", i, u.File, s.lim.intake, u.Live, compactions)
		}
		if u, _ := s.Origin(OriginRaw); u.Full(need) {
			if _, err := s.MakeRoom(OriginRaw, need); err != nil {
				t.Fatal(err)
			}
		}
		no := "RAW" + seqName(i)
		if _, _, err := s.Accept(originTask(no, OriginRaw, maxTask-1024)); err != nil {
			t.Fatalf("ticket %d, after Room said yes: %v", i, err)
		}
		printAll(t, s, no)
	}
	t.Logf("compactions %d, reclaimed %d", compactions, s.Reclaimed())
}

// TestMakeFileRoomForAnotherDoor ensures one door's printed tickets, kept
// for reprints below the point where commits reclaim on their own, do not
// keep another door that is under its quota waiting for room: MakeFileRoom
// drops the oldest printed bodies and asks for the compaction that gives
// the room, and the tickets not yet printed keep theirs.
func TestMakeFileRoomForAnotherDoor(t *testing.T) {
	const maxTask = 1 << 20
	const capBytes = 16 << 20
	s, _ := openTest(t, Options{MaxSize: capBytes, MaxTaskBytes: maxTask, Retention: 7 * 24 * time.Hour,
		Quotas: map[Origin]int64{OriginRaw: capBytes / 4, OriginLocal: capBytes * 3 / 4}})
	waiting := "API-WAITING"
	mustAccept(t, s, originTask(waiting, OriginLocal, 8<<10))
	need := Charge(maxTask)
	// Printed API tickets until the raw door's Room says no even after a
	// compaction: the live data itself leaves no room, and the API door
	// is still under its quota.
	var printed []string
	for i := 0; ; i++ {
		ok, err := s.Room(need)
		if err == nil && !ok {
			compactIfFragmented(t, s)
			ok, err = s.Room(need)
		}
		if err != nil {
			t.Fatal(err)
		} else if !ok {
			break
		}
		if i == 400 {
			t.Fatal("400 printed API tickets and the raw door still has room")
		}
		no := "API" + seqName(i)
		mustAccept(t, s, originTask(no, OriginLocal, 64<<10))
		printAll(t, s, no)
		printed = append(printed, no)
	}
	if u, _ := s.Origin(OriginLocal); u.Full(64 << 10) {
		t.Fatalf("the API door reached its quota (%d of %d): the test wants it under", u.Used, u.Quota)
	}
	for len(s.CompactWanted()) > 0 {
		<-s.CompactWanted() // Room's own wish; MakeFileRoom must make one too
	}
	n, err := s.MakeFileRoom(need)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.CompactWanted():
	default:
		t.Fatal("MakeFileRoom did not ask for a compaction")
	}
	compactIfFragmented(t, s)
	if ok, err := s.Room(need); err != nil || !ok {
		u, _ := s.Usage()
		t.Fatalf("no room for the raw door after MakeFileRoom (%d bodies dropped) and its compaction: %v %v (file %d, live %d)", n, ok, err, u.File, u.Live)
	}
	if n == 0 || n == len(printed) {
		t.Errorf("%d of %d printed bodies dropped; want some, not all", n, len(printed))
	}
	if got, err := s.Get(waiting); err != nil || len(got.Payload) != 8<<10 {
		t.Errorf("the ticket not yet printed lost its body: %v", err)
	}
}
