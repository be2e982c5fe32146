package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/spool"
)

// keptOpenRun is rawRun plus the kept-open client's tickets around a
// reload at t0+10s and a kill at t0+20s, all kept:
//   - K000001 answered just before the reload, printed whole;
//   - K000002 taken without its cut at the reload (INCOMPLETE JOB), sent
//     again on the next connection and printed whole;
//   - K000003 answered just before the kill, not on paper (excused);
//   - K000004 never answered, not on paper.
func keptOpenRun() observed {
	o := rawRun()
	o.Reloads = []timeSpan{{From: t0.Add(10 * time.Second), To: t0.Add(10600 * time.Millisecond)}}
	o.KillTimes = []time.Time{t0.Add(20 * time.Second)}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	o.Raw["K000001"] = rawJob{Printer: 5, Attempts: 1, Acked: true, KeptOpen: true, SentAt: at(9800 * time.Millisecond), AckedAt: at(9801 * time.Millisecond)}
	o.Raw["K000002"] = rawJob{Printer: 5, Attempts: 2, Acked: true, KeptOpen: true, SentAt: at(12 * time.Second), AckedAt: at(12 * time.Second)}
	o.Raw["K000003"] = rawJob{Printer: 5, Attempts: 1, Acked: true, KeptOpen: true, SentAt: at(19 * time.Second), AckedAt: at(19 * time.Second)}
	o.Raw["K000004"] = rawJob{Printer: 5, Attempts: 1, KeptOpen: true}
	add := func(no, tag string, truncated bool) {
		t := mkTask(no, spool.StatePrinted, t0, t0.Add(time.Second))
		t.Origin, t.Printer, t.Truncated = "raw", "p5", truncated
		o.API[no] = t
		o.RawTags[no] = tag
		o.Events = append(o.Events, ev(no, 1, spool.StateAccepted), ev(no, 2, spool.StateSending), ev(no, 3, spool.StatePrinted))
	}
	paper := func(lines ...string) {
		o.Tickets = append(o.Tickets, printertest.Ticket{Lines: lines, Cut: "full", At: t0.Add(time.Second)})
		o.PaperOf = append(o.PaperOf, 5)
	}
	add("RAW_p5_20261130-120010_3", "K000001", false)
	paper("RAWTICKET K000001")
	add("RAW_p5_20261130-120011_4", "K000002", true)
	add("RAW_p5_20261130-120012_5", "K000002", false)
	paper("    INCOMPLETE JOB    ", "RAWTICKET K000002", "", "--- END OF INCOMPLETE JOB ---")
	paper("RAWTICKET K000002")
	return o
}

func TestCheckKeptOpenClean(t *testing.T) {
	res := check(keptOpenRun())
	if len(res.Violations) != 0 {
		t.Fatalf("a clean run with kept-open tickets has violations: %q", res.Violations)
	}
	want := KeptOpenResult{Reloads: 1, KeptOpenSent: 4, KeptOpenAcked: 3, KeptOpenResends: 1, KeptOpenPrinted: 2,
		KeptOpenAtKill: 1, KeptOpenAtReload: 1, KeptOpenUnacked: 1, KeptOpenTruncated: 1}
	if len(res.KeptOpenAtKillTags) != 1 || res.KeptOpenAtKillTags[0] != "K000003 (answered 1s before the kill)" {
		t.Errorf("kept-open tickets lost at a kill reported as %q", res.KeptOpenAtKillTags)
	}
	res.KeptOpenAtKillTags = nil
	if !reflect.DeepEqual(res.KeptOpenResult, want) {
		t.Errorf("kept-open table %+v, want %+v", res.KeptOpenResult, want)
	}
	// The other raw rows do not count the kept-open tickets, but for the
	// truncated copies on paper.
	if res.RawSent != 4 || res.RawAcked != 3 || res.RawBlind != 0 || res.RawTruncated != 2 {
		t.Errorf("raw table %+v", res)
	}
}

func TestCheckKeptOpenBroken(t *testing.T) {
	const lost = "raw kept-open job acknowledged, not printed"
	cases := []struct {
		name, kind string
		breakIt    func(o *observed)
	}{
		{"dropped by the drain of a reload", lost, func(o *observed) {
			j := o.Raw["K000003"]
			j.SentAt, j.AckedAt = t0.Add(9900*time.Millisecond), t0.Add(9900*time.Millisecond)
			o.Raw["K000003"] = j
		}},
		{"dropped by a reload's drain, then a kill", lost, func(o *observed) {
			// The kill after the reload excuses nothing: the drain was
			// over by the reload's answer.
			o.Reloads = append(o.Reloads, timeSpan{From: t0.Add(19200 * time.Millisecond), To: t0.Add(19800 * time.Millisecond)})
		}},
		{"taken at the reload and printed again unmarked", "raw unmarked duplicates", func(o *observed) {
			o.Tickets = append(o.Tickets, printertest.Ticket{Lines: []string{"RAWTICKET K000001"}, Cut: "full"})
			o.PaperOf = append(o.PaperOf, 5)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := keptOpenRun()
			c.breakIt(&o)
			res := check(o)
			if len(res.Violations) != 1 || !strings.HasPrefix(res.Violations[0], c.kind+": 1") {
				t.Errorf("violations %q, want one %q", res.Violations, c.kind)
			}
		})
	}
}
