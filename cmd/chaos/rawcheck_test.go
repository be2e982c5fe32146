package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// rawRun is cleanRun plus four raw jobs that kept the promise:
//   - R000010 to p0, taken at once, printed at its backup p1 (failover);
//   - R000011 to p3, its first attempt reset after the agent took it, so
//     the resend printed under the POSSIBLE DUPLICATE banner;
//   - R000012 to p5, its first attempt cut short by the POS and taken
//     truncated (INCOMPLETE JOB), then sent whole;
//   - R000013 to p6, never acknowledged and not on paper.
func rawRun() observed {
	o := cleanRun()
	o.PaperOf = []int{0, 2, 5}
	o.Raw = map[string]rawJob{
		"R000010": {Printer: 0, Attempts: 1, Acked: true},
		"R000011": {Printer: 3, Attempts: 2, Acked: true},
		"R000012": {Printer: 5, Attempts: 2, Acked: true, Aborted: true},
		"R000013": {Printer: 6, Attempts: 4},
	}
	o.RawTags = map[string]string{}
	add := func(no, tag string, f func(*apiTask)) {
		t := mkTask(no, spool.StatePrinted, t0, t0.Add(time.Second))
		t.Origin, t.Printer = "raw", no[4:6]
		if f != nil {
			f(&t)
		}
		o.API[no] = t
		o.RawTags[no] = tag
		o.Events = append(o.Events, ev(no, 1, spool.StateAccepted), ev(no, 2, spool.StateSending), ev(no, 3, spool.StatePrinted))
	}
	paper := func(printer int, cut string, lines ...string) {
		o.Tickets = append(o.Tickets, printertest.Ticket{Lines: lines, Cut: cut, At: t0.Add(time.Second)})
		o.PaperOf = append(o.PaperOf, printer)
	}
	add("RAW_p0_20261130-120000_1", "R000010", nil)
	paper(1, "full", " FAILOVER p0 → p1 ", "RAWTICKET R000010")
	add("RAW_p3_20261130-120000_1", "R000011", nil)
	add("RAW_p3_20261130-120001_2", "R000011", func(t *apiTask) { t.PossibleDuplicate = true })
	paper(3, "full", "RAWTICKET R000011")
	paper(3, "full", "   POSSIBLE DUPLICATE   ", "RAWTICKET R000011")
	add("RAW_p5_20261130-120000_1", "R000012", func(t *apiTask) { t.Truncated = true })
	add("RAW_p5_20261130-120001_2", "R000012", nil)
	paper(5, "partial", "    INCOMPLETE JOB    ", "RAWTICKET R000012", "", "--- END OF INCOMPLETE JOB ---")
	paper(5, "full", "RAWTICKET R000012")
	return o
}

func TestCheckRawClean(t *testing.T) {
	res := check(rawRun())
	if len(res.Violations) != 0 {
		t.Fatalf("a clean run with raw jobs has violations: %q", res.Violations)
	}
	if res.RawSent != 4 || res.RawAcked != 3 || res.RawResends != 5 || res.RawAborted != 1 || res.RawTasks != 5 ||
		res.RawPrinted != 3 || res.RawMarked != 1 || res.RawTruncated != 1 || res.RawUnacked != 1 || res.RawUnackedPrinted != 0 {
		t.Errorf("raw table %+v", res)
	}
	if len(res.RawUnackedTags) != 1 || !strings.HasPrefix(res.RawUnackedTags[0], "R000013 (p6") {
		t.Errorf("unacknowledged tags reported as %q", res.RawUnackedTags)
	}
	// The LAN and cloud table is unchanged by the raw tickets.
	if res.Accepted != 3 || res.Printed != 3 || res.Marked != 0 || res.Unmarked != 0 {
		t.Errorf("table %+v", res)
	}
}

func TestCheckRawBroken(t *testing.T) {
	paper := func(o *observed, printer int, lines ...string) {
		o.Tickets = append(o.Tickets, printertest.Ticket{Lines: lines, Cut: "full"})
		o.PaperOf = append(o.PaperOf, printer)
	}
	// The runner printed a tag twice without the banner.
	o := rawRun()
	paper(&o, 0, "RAWTICKET R000010")
	res := check(o)
	wantViolation(t, res, "raw unmarked duplicates")
	// A tag the POS never acknowledged, printed twice unmarked: as bad.
	o = rawRun()
	paper(&o, 6, "RAWTICKET R000013")
	if res := check(o); len(res.Violations) != 0 || res.RawUnackedPrinted != 1 {
		t.Errorf("an unacknowledged tag printed once: %q, %+v", res.Violations, res)
	}
	paper(&o, 6, "RAWTICKET R000013")
	wantViolation(t, check(o), "raw unmarked duplicates")

	// Acknowledged, never on paper, nobody told.
	o = rawRun()
	o.Tickets, o.PaperOf = o.Tickets[:3], o.PaperOf[:3]
	paper(&o, 3, "RAWTICKET R000011")
	paper(&o, 5, "RAWTICKET R000012")
	wantViolation(t, check(o), "raw job acknowledged, not printed whole")
	// ... but TIMED_OUT and the cloud told: counted, not failed.
	tk := o.API["RAW_p0_20261130-120000_1"]
	tk.State = spool.StateTimedOut
	o.API[tk.TaskNo] = tk
	o.Events[11] = ev(tk.TaskNo, 3, spool.StateTimedOut) // cleanRun has 9 events, then RAW_p0's
	if res := check(o); len(res.Violations) != 0 || res.RawTold != 1 {
		t.Errorf("a told timeout: %q, told %d", res.Violations, res.RawTold)
	}

	// Only the truncated copy, or only uncut text, is not the job whole.
	o = rawRun()
	o.Tickets[len(o.Tickets)-1].Lines = []string{""} // R000012's whole copy gone
	wantViolation(t, check(o), "raw job acknowledged, not printed whole")
	o = rawRun()
	o.Tickets[3].Cut = ""
	wantViolation(t, check(o), "raw job acknowledged, not printed whole")

	// On paper but never sent; on a printer that is neither its own nor
	// its backup.
	o = rawRun()
	paper(&o, 0, "RAWTICKET R999999")
	wantViolation(t, check(o), "raw printed but never sent")
	o = rawRun()
	o.PaperOf[3] = 2
	wantViolation(t, check(o), "raw printed on another printer")

	// The API: a raw job missing, another origin, a task no POS sent.
	o = rawRun()
	delete(o.API, "RAW_p0_20261130-120000_1")
	wantViolation(t, check(o), "raw job acknowledged but not in the API")
	o = rawRun()
	tk = o.API["RAW_p0_20261130-120000_1"]
	tk.Origin = "local"
	o.API[tk.TaskNo] = tk
	wantViolation(t, check(o), "raw task without origin raw")
	o = rawRun()
	o.RawTags["RAW_p0_20261130-120000_1"] = "R000099"
	wantViolation(t, check(o), "raw task no POS sent")
	o = rawRun()
	tk = o.API["RAW_p3_20261130-120000_1"]
	tk.State = spool.StateQueued
	o.API[tk.TaskNo] = tk
	wantViolation(t, check(o), "raw task not terminal at the end")

	// Banners the task does not carry.
	o = rawRun()
	tk = o.API["RAW_p3_20261130-120001_2"]
	tk.PossibleDuplicate = false
	o.API[tk.TaskNo] = tk
	wantViolation(t, check(o), "raw marked copy without the flag")
	o = rawRun()
	tk = o.API["RAW_p5_20261130-120000_1"]
	tk.Truncated = false
	o.API[tk.TaskNo] = tk
	wantViolation(t, check(o), "raw INCOMPLETE copy without the flag")
}

// TestCheckRawWriteAndClose: a job sent write-and-close (the POS never
// hears back) must print like an acknowledged one; absent from paper it is
// lost, unless the agent was SIGKILLed within rawBlindKillWindow after it
// was written.
func TestCheckRawWriteAndClose(t *testing.T) {
	o := rawRun()
	o.Raw["R000014"] = rawJob{Printer: 6, Attempts: 1, Blind: true, SentAt: t0}
	o.API["RAW_p6_20261130-120000_1"] = func() apiTask {
		tk := mkTask("RAW_p6_20261130-120000_1", spool.StatePrinted, t0, t0.Add(time.Second))
		tk.Origin, tk.Printer = "raw", "p6"
		return tk
	}()
	o.RawTags["RAW_p6_20261130-120000_1"] = "R000014"
	o.Events = append(o.Events, ev("RAW_p6_20261130-120000_1", 1, spool.StateAccepted), ev("RAW_p6_20261130-120000_1", 2, spool.StateSending), ev("RAW_p6_20261130-120000_1", 3, spool.StatePrinted))
	o.Tickets = append(o.Tickets, printertest.Ticket{Lines: []string{"RAWTICKET R000014"}, Cut: "full", At: t0.Add(time.Second)})
	o.PaperOf = append(o.PaperOf, 6)
	if res := check(o); len(res.Violations) != 0 || res.RawBlind != 1 || res.RawBlindPrinted != 1 || res.RawUnacked != 1 {
		t.Fatalf("a write-and-close job printed: %q, %+v", res.Violations, res)
	}

	// Written, never stored, never printed: lost.
	o = rawRun()
	o.Raw["R000014"] = rawJob{Printer: 6, Attempts: 1, Blind: true, SentAt: t0}
	wantViolation(t, check(o), "raw write-and-close job lost")
	// ... unless the agent was killed right after it was written.
	o.KillTimes = []time.Time{t0.Add(rawBlindKillWindow / 2)}
	if res := check(o); len(res.Violations) != 0 || res.RawBlindAtKill != 1 {
		t.Fatalf("a write-and-close job lost to a kill: %q, %+v", res.Violations, res)
	}
	// A kill long after, or before, excuses nothing.
	o.KillTimes = []time.Time{t0.Add(-time.Second), t0.Add(2 * rawBlindKillWindow)}
	wantViolation(t, check(o), "raw write-and-close job lost")
	// Never written (the load ended first): not sent, nothing owed.
	o = rawRun()
	o.Raw["R000014"] = rawJob{Printer: 6, Attempts: 1, Blind: true}
	if res := check(o); len(res.Violations) != 0 || res.RawBlind != 0 {
		t.Fatalf("a write-and-close job never written: %q, %+v", res.Violations, res)
	}
}

// TestRawCopiesOnEmulator prints a raw job as the agent sends it (banners
// rendered by escpos, then the POS's bytes) on the emulator and reads it
// back as the check does.
func TestRawCopiesOnEmulator(t *testing.T) {
	prof, err := escpos.LookupProfile("epson-80")
	if err != nil {
		t.Fatal(err)
	}
	p := printertest.New(printertest.Options{Name: "p0", Model: printertest.ModelEpson})
	defer p.Close()
	if got := rawTag(rawTicket("R000007", true)); got != "R000007" {
		t.Fatalf("rawTag of a raw job = %q", got)
	}
	banner, err := escpos.RenderBanner(prof, escpos.RenderOptions{PossibleDuplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	incomplete, err := escpos.RenderBanner(prof, escpos.RenderOptions{Incomplete: true})
	if err != nil {
		t.Fatal(err)
	}
	end, err := escpos.RenderIncompleteEnd(prof)
	if err != nil {
		t.Fatal(err)
	}
	var job []byte
	job = append(job, rawTicket("R000001", true)...)
	job = append(append(job, banner...), rawTicket("R000001", true)...)
	job = append(append(append(job, incomplete...), rawTicket("R000002", false)...), end...)
	job = append(job, rawTicket("R000002", true)...)
	p.Write(job)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tickets, err := p.WaitTickets(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	got := rawCopies(tickets, []int{0, 0, 0, 0})
	want := map[string][]rawCopy{
		"R000001": {{Printer: 0, Cut: true}, {Printer: 0, Marked: true, Cut: true}},
		"R000002": {{Printer: 0, Truncated: true, Cut: true}, {Printer: 0, Cut: true}},
	}
	for tag, w := range want {
		if len(got[tag]) != len(w) {
			t.Fatalf("%s: copies %+v, want %+v (tickets %+v)", tag, got[tag], w, tickets)
		}
		for k := range w {
			if got[tag][k] != w[k] {
				t.Errorf("%s copy %d: %+v, want %+v", tag, k, got[tag][k], w[k])
			}
		}
	}
}
