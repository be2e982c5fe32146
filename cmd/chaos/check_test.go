package main

import (
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/spool"
	"printgate/sync/wire"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// cleanRun is a run that kept the promise: three tasks on p0, p2 and p5,
// each printed once, the cloud told of each.
func cleanRun() observed {
	o := observed{
		Accepted: map[string]int{"CH000000_v1": 0, "CH000001_v1": 2, "CH000002_v1": 5},
		Refused:  map[string]string{},
		API:      map[string]apiTask{},
		Outs:     make([][]timeSpan, 8),
		Backups:  backups, Printers: 8, End: t0.Add(time.Minute),
	}
	for _, no := range []string{"CH000000_v1", "CH000001_v1", "CH000002_v1"} { // in this order: tests index the slices
		o.API[no] = mkTask(no, spool.StatePrinted, t0, t0.Add(time.Second))
		o.Tickets = append(o.Tickets, printertest.Ticket{Lines: []string{"TICKET " + no}, At: t0.Add(500 * time.Millisecond)})
		o.Events = append(o.Events, ev(no, 1, spool.StateAccepted), ev(no, 2, spool.StateSending), ev(no, 3, spool.StatePrinted))
	}
	return o
}

func mkTask(no string, st spool.State, from, to time.Time) apiTask {
	t := apiTask{TaskNo: no, State: st}
	t.Timeline = append(t.Timeline, timelineRow{State: spool.StateAccepted, At: from}, timelineRow{State: st, At: to})
	return t
}

func ev(no string, n int, st spool.State) wire.Event {
	return wire.Event{TaskNo: no, N: n, State: st}
}

// wantViolation checks that res has a violation starting with kind, and
// only ones in kinds.
func wantViolation(t *testing.T, res *Result, kind string) {
	t.Helper()
	for _, v := range res.Violations {
		if strings.HasPrefix(v, kind+":") {
			return
		}
	}
	t.Errorf("no %q violation in %q", kind, res.Violations)
}

func TestCheckClean(t *testing.T) {
	res := check(cleanRun())
	if len(res.Violations) != 0 {
		t.Fatalf("a clean run has violations: %q", res.Violations)
	}
	if res.Accepted != 3 || res.Printed != 3 || res.Lost != 0 || res.LatencyMeanMS != 500 || res.QuietTasks != 3 {
		t.Errorf("table %+v", res)
	}
	// A kill after the paper changes nothing; one while all waited leaves none quiet.
	o := cleanRun()
	o.KillTimes = []time.Time{t0.Add(600 * time.Millisecond)}
	if res := check(o); res.QuietTasks != 3 {
		t.Errorf("a kill after the paper made %d quiet, want 3", res.QuietTasks)
	}
	o.KillTimes = []time.Time{t0.Add(100 * time.Millisecond)}
	o.Outs[2] = []timeSpan{{From: t0.Add(-time.Second), To: t0.Add(time.Second)}}
	if res := check(o); res.QuietTasks != 0 {
		t.Errorf("%d quiet tasks with a kill during all of them", res.QuietTasks)
	}
}

func TestCheckLost(t *testing.T) {
	o := cleanRun()
	o.Tickets = o.Tickets[1:] // one never came out, though the agent says PRINTED
	res := check(o)
	if res.Lost != 1 {
		t.Errorf("lost %d, want 1", res.Lost)
	}
	wantViolation(t, res, "lost")
	wantViolation(t, res, "PRINTED but not on paper")

	// Text printed but never cut is on paper: not lost.
	o = cleanRun()
	o.Tickets[0].Cut, o.Tickets[0].At = "", time.Time{}
	if res := check(o); len(res.Violations) != 0 {
		t.Errorf("uncut text counted as missing: %q", res.Violations)
	}

	// Accepted but unknown to the agent.
	o = cleanRun()
	o.Accepted["CH000009_v1"] = 1
	wantViolation(t, check(o), "lost")
}

func TestCheckDuplicates(t *testing.T) {
	o := cleanRun()
	o.Tickets = append(o.Tickets, printertest.Ticket{Lines: []string{"TICKET CH000001_v1"}, At: t0.Add(2 * time.Second)})
	res := check(o)
	if res.Unmarked != 1 {
		t.Errorf("unmarked %d, want 1", res.Unmarked)
	}
	wantViolation(t, res, "unmarked duplicates")

	// Under the banner with the flag: counted, allowed while in the bound.
	o = cleanRun()
	o.Tickets = append(o.Tickets, printertest.Ticket{Lines: []string{"** POSSIBLE DUPLICATE **", "TICKET CH000001_v1"}})
	tk := o.API["CH000001_v1"]
	tk.PossibleDuplicate = true
	o.API["CH000001_v1"] = tk
	o.DropsFired = 1
	res = check(o)
	if res.Marked != 1 || len(res.Violations) != 0 {
		t.Errorf("marked %d, violations %q", res.Marked, res.Violations)
	}
	// Over the bound: no drop, kill or spell could have caused it.
	o.DropsFired = 0
	wantViolation(t, check(o), "marked duplicates over their bound")
	// Without the flag.
	tk.PossibleDuplicate = false
	o.API["CH000001_v1"] = tk
	wantViolation(t, check(o), "marked copy without the flag")
}

func TestCheckTimedOut(t *testing.T) {
	// CH000000 on p0 (backup p1) timed out, not on paper, the cloud told.
	base := func() observed {
		o := cleanRun()
		o.API["CH000000_v1"] = mkTask("CH000000_v1", spool.StateTimedOut, t0, t0.Add(90*time.Second))
		o.Tickets = o.Tickets[1:]
		o.Events[2] = ev("CH000000_v1", 3, spool.StateTimedOut)
		return o
	}
	o := base()
	wantViolation(t, check(o), "TIMED_OUT with a printer that was not out")

	o.Outs[0] = []timeSpan{{From: t0.Add(10 * time.Second), To: t0.Add(70 * time.Second), Kind: spellOffline}}
	wantViolation(t, check(o), "TIMED_OUT with a printer that was not out") // its backup was fine

	o.Outs[1] = []timeSpan{{From: t0.Add(-time.Minute), To: t0.Add(time.Second), Kind: spellPaperOut}}
	res := check(o)
	if len(res.Violations) != 0 || res.TimedOut != 1 || res.Lost != 0 {
		t.Errorf("explained timeout: timed out %d, lost %d, violations %q", res.TimedOut, res.Lost, res.Violations)
	}

	// p5 has no backup: its own spell explains it.
	o = cleanRun()
	o.API["CH000002_v1"] = mkTask("CH000002_v1", spool.StateTimedOut, t0, t0.Add(90*time.Second))
	o.Events[8] = ev("CH000002_v1", 3, spool.StateTimedOut)
	o.Outs[5] = []timeSpan{{From: t0.Add(80 * time.Second), To: t0.Add(100 * time.Second)}}
	if res := check(o); len(res.Violations) != 0 || res.TimedOutOnPaper != 1 {
		t.Errorf("timed out on paper: %+v", res)
	}

	// Held after two outcomes in doubt (the run's drops cut both
	// copies), then timed out with no printer out: the lane's decision,
	// told; one UNKNOWN is not enough, nor are runs without drops.
	held := func(unknowns int) apiTask {
		tk := apiTask{TaskNo: "CH000000_v1", State: spool.StateTimedOut}
		tk.Timeline = append(tk.Timeline, timelineRow{State: spool.StateAccepted, At: t0})
		for range unknowns {
			tk.Timeline = append(tk.Timeline, timelineRow{State: spool.StateSending, At: t0}, timelineRow{State: spool.StateUnknown, At: t0})
		}
		tk.Timeline = append(tk.Timeline, timelineRow{State: spool.StateHeld, At: t0, Reason: "REPEATED_UNKNOWN"},
			timelineRow{State: spool.StateTimedOut, At: t0.Add(90 * time.Second), Reason: "NO_ACK"})
		return tk
	}
	o = base()
	o.DropsFired = 2
	o.API["CH000000_v1"] = held(2)
	if res := check(o); len(res.Violations) != 0 || res.TimedOutHeld != 1 {
		t.Errorf("held after two unknowns, then timed out: held %d, violations %q", res.TimedOutHeld, res.Violations)
	}
	o.API["CH000000_v1"] = held(1)
	wantViolation(t, check(o), "TIMED_OUT with a printer that was not out")
	o.API["CH000000_v1"] = held(2)
	o.DropsFired = 0
	wantViolation(t, check(o), "TIMED_OUT with a printer that was not out")

	// Timed out but the cloud never heard: nobody was told, so lost.
	o = base()
	o.Outs[0] = []timeSpan{{From: t0, To: t0.Add(time.Minute)}}
	o.Outs[1] = o.Outs[0]
	o.Events = o.Events[:2]
	wantViolation(t, check(o), "lost")
}

func TestCheckCloud(t *testing.T) {
	o := cleanRun()
	o.Events = o.Events[:len(o.Events)-1] // CH000002's PRINTED never reached the cloud
	wantViolation(t, check(o), "cloud differs from the spool")

	o = cleanRun()
	o.Events = append(o.Events[:1], o.Events[2:]...) // CH000000's n 2 is missing
	wantViolation(t, check(o), "events missing in the cloud")

	o = cleanRun()
	o.Events[0], o.Events[1] = o.Events[1], o.Events[0]
	wantViolation(t, check(o), "events out of order")

	o = cleanRun()
	o.Events = append(o.Events, ev("ZZ_v1", 1, spool.StateAccepted))
	wantViolation(t, check(o), "cloud events for a task the agent does not have")

	o = cleanRun()
	o.OrderWarnings = 2
	wantViolation(t, check(o), "event batches out of task_no order")

	o = cleanRun()
	o.UnackedJobs = []string{"CH000007_v1"}
	o.Unanswered = []string{"CH000008_v1"}
	o.AgentExits = []string{"pid 1 exited on its own"}
	res := check(o)
	wantViolation(t, res, "cloud job never acknowledged")
	wantViolation(t, res, "LAN submission never answered")
	wantViolation(t, res, "agent exited on its own")
}

// TestCheckRetriesClickedTwice ensures the check accepts a double click on
// Retry that made one version, whose copy (marked, flagged on the version)
// is the ticket's only other one, and reports one that made two versions,
// or a second unmarked copy.
func TestCheckRetriesClickedTwice(t *testing.T) {
	retried := func(versions int, marked bool) observed {
		o := cleanRun()
		no := "CH000001_v1"
		o.API[no] = mkTask(no, spool.StateTimedOut, t0, t0.Add(time.Second))
		o.Events[5] = ev(no, 3, spool.StateTimedOut)
		// It timed out on p2 (and its backup p3), offline, and never
		// came out.
		for _, p := range []int{2, 3} {
			o.Outs[p] = []timeSpan{{From: t0.Add(-time.Second), To: t0.Add(2 * time.Second), Kind: spellOffline}}
		}
		o.Tickets = []printertest.Ticket{o.Tickets[0], o.Tickets[2]}
		o.Retried = map[string][]string{no: {"/tasks/CH000001_v2", "/tasks/CH000001_v2"}}
		for i := range versions {
			vno := "CH000001_v" + string(rune('2'+i))
			vt := mkTask(vno, spool.StatePrinted, t0.Add(2*time.Second), t0.Add(3*time.Second))
			vt.Origin, vt.ReprintOf, vt.PossibleDuplicate = "manager", no, marked
			o.API[vno] = vt
			o.Events = append(o.Events, ev(vno, 1, spool.StateAccepted), ev(vno, 2, spool.StatePrinted))
			line := []string{"TICKET " + no}
			if marked {
				line = append([]string{"POSSIBLE DUPLICATE"}, line...)
			}
			o.Tickets = append(o.Tickets, printertest.Ticket{Lines: line, At: t0.Add(3 * time.Second)})
		}
		return o
	}
	res := check(retried(1, true))
	if len(res.Violations) != 0 || res.RetriedTwice != 1 || res.RetryVersions != 1 {
		t.Errorf("one version: %+v", res)
	}
	res = check(retried(1, false))
	if len(res.Violations) != 0 {
		t.Errorf("one unmarked version of a ticket never on paper: %v", res.Violations)
	}
	wantViolation(t, check(retried(2, false)), "a retry clicked twice made two versions")
	wantViolation(t, check(retried(2, false)), "unmarked duplicates")
}
