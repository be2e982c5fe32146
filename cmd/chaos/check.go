package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"printgate/drivers/printertest"
	"printgate/spool"
)

// apiTask is a task as GET /api/v1/tasks shows it.
type apiTask struct {
	TaskNo            string      `json:"task_no"`
	Printer           string      `json:"printer"`
	State             spool.State `json:"state"`
	Reason            string      `json:"reason"`
	PossibleDuplicate bool        `json:"possible_duplicate"`
	Timeline          []struct {
		State spool.State `json:"state"`
		At    time.Time   `json:"at"`
	} `json:"timeline"`
}

// acceptedAt is when the agent took the task (its first timeline row).
func (t apiTask) acceptedAt() time.Time {
	if len(t.Timeline) == 0 {
		return time.Time{}
	}
	return t.Timeline[0].At
}

// endedAt is when the task reached its terminal state, or zero.
func (t apiTask) endedAt() time.Time {
	for _, row := range t.Timeline {
		if row.State.Terminal() {
			return row.At
		}
	}
	return time.Time{}
}

// observed is everything the run saw, collected after the drain: the
// input of check, kept apart from the running cast so the checks can be
// tested on made-up observations.
type observed struct {
	// Accepted are the tasks the agent accepted (a 202 or 200 over the
	// LAN, an accepted or duplicate job_ack), with the printer each was
	// sent to.
	Accepted map[string]int
	// Refused are submissions answered with anything else, and why.
	Refused map[string]string
	// Unanswered are LAN tasks still without an answer; UnackedJobs cloud
	// jobs the agent never acknowledged.
	Unanswered, UnackedJobs []string
	// API is every task the agent's API lists.
	API map[string]apiTask
	// Events is the cloud's deduplicated event log, in arrival order.
	Events []spool.Event
	// OrderWarnings counts event batches the cloud saw out of task_no order.
	OrderWarnings int
	// Tickets is everything on paper, uncut text included.
	Tickets []printertest.Ticket
	// Outs are each printer's spells (offline, paper out, flapping).
	Outs    [][]timeSpan
	Backups map[int]int
	// DropsFired, Kills and Spells bound the marked duplicates; Printers
	// is how many jobs one kill can leave in doubt.
	DropsFired, Kills, Spells, Printers int
	AgentExits                          []string
	// KillTimes are when the agent was SIGKILLed.
	KillTimes []time.Time
	End       time.Time // when the drain ended
}

// Result is the chaos run's table, written as JSON to --out.
type Result struct {
	Seed    uint64 `json:"seed"`
	Command string `json:"command"`
	Elapsed string `json:"elapsed"`

	Planned       int `json:"tasks_planned"`
	Accepted      int `json:"tasks_accepted"`
	AcceptedLAN   int `json:"accepted_lan"`
	AcceptedCloud int `json:"accepted_cloud"`
	Refused       int `json:"refused"`
	Printed       int `json:"printed"`
	Lost          int `json:"lost"`
	Unmarked      int `json:"unmarked_duplicates"`
	Marked        int `json:"marked_duplicates"`
	MarkedBound   int `json:"marked_duplicates_bound"`
	TimedOut      int `json:"timed_out"`
	// TimedOutOnPaper are timed-out tasks that came out anyway (the
	// deadline passed while the job was in doubt): told, and on paper.
	TimedOutOnPaper int `json:"timed_out_on_paper"`
	Failed          int `json:"failed"`
	Canceled        int `json:"canceled"`

	LatencyMeanMS float64 `json:"latency_mean_ms"`
	LatencyP50MS  float64 `json:"latency_p50_ms"`
	LatencyP99MS  float64 `json:"latency_p99_ms"`
	LatencyMaxMS  float64 `json:"latency_max_ms"`
	// Quiet latencies are of the tasks during whose wait their printer
	// had no spell and the agent was not killed: the agent's own
	// overhead under load, mid-job drops included.
	QuietTasks        int     `json:"quiet_tasks"`
	QuietLatencyP50MS float64 `json:"quiet_latency_p50_ms"`
	QuietLatencyP99MS float64 `json:"quiet_latency_p99_ms"`
	PeakCPU           float64 `json:"peak_cpu_percent"`
	PeakRSSMiB        float64 `json:"peak_rss_mib"`

	Kills        int     `json:"kills"`
	DropsFired   int     `json:"drops"`
	Spells       int     `json:"printer_spells"`
	WANDownShare float64 `json:"wan_down_share"`
	CloudEvents  int     `json:"cloud_events"`

	Violations []string `json:"violations"`
}

// maxExamples bounds the task numbers a violation lists.
const maxExamples = 8

// check computes the table and the violations from what the run saw.
func check(o observed) *Result {
	res := &Result{Accepted: len(o.Accepted), Refused: len(o.Refused), Kills: o.Kills, DropsFired: o.DropsFired, Spells: o.Spells}
	var v violations

	plain, marked := printertest.Copies(o.Tickets, "TICKET", "POSSIBLE DUPLICATE")
	firstOnPaper := map[string]time.Time{}
	for _, tk := range o.Tickets {
		at := tk.At
		if at.IsZero() {
			at = o.End // text not cut yet: on paper by the end at the latest
		}
		for _, line := range tk.Lines {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "TICKET" {
				if old, ok := firstOnPaper[f[1]]; !ok || at.Before(old) {
					firstOnPaper[f[1]] = at
				}
			}
		}
	}

	// The cloud's log, by task: the events in arrival order.
	byTask := map[string][]spool.Event{}
	for _, e := range o.Events {
		byTask[e.TaskNo] = append(byTask[e.TaskNo], e)
	}
	res.CloudEvents = len(o.Events)

	var lat, quiet []float64
	for _, no := range sortedKeys(o.Accepted) {
		printer := o.Accepted[no]
		t, known := o.API[no]
		copies := plain[no] + marked[no]
		if copies > 0 {
			res.Printed++
			if from, to := t.acceptedAt(), firstOnPaper[no]; known && !from.IsZero() {
				ms := float64(to.Sub(from)) / float64(time.Millisecond)
				lat = append(lat, ms)
				if isQuiet(from, to, printer, o) {
					quiet = append(quiet, ms)
				}
			}
		}
		res.Marked += marked[no]
		if plain[no] > 1 {
			res.Unmarked++
			v.add("unmarked duplicates", no, fmt.Sprintf("%d copies without the POSSIBLE DUPLICATE banner", plain[no]))
		}
		if !known {
			if copies == 0 {
				res.Lost++
				v.add("lost", no, "accepted, not on paper, and unknown to the agent's API")
			}
			continue
		}
		if marked[no] > 0 && !t.PossibleDuplicate {
			v.add("marked copy without the flag", no, "a copy under the banner but possible_duplicate is false")
		}
		switch t.State {
		case spool.StateTimedOut:
			res.TimedOut++
			if copies > 0 {
				res.TimedOutOnPaper++
			}
			if why := timedOutExplained(t, printer, o.Outs, o.Backups); why != "" {
				v.add("TIMED_OUT with a printer that was not out", no, why)
			}
		case spool.StateFailed:
			res.Failed++
		case spool.StateCanceled:
			res.Canceled++
		}
		if copies == 0 {
			told := t.State == spool.StateTimedOut || t.State == spool.StateFailed || t.State == spool.StateCanceled
			evs := byTask[no]
			if told && (len(evs) == 0 || evs[len(evs)-1].State != t.State) {
				told = false // nobody in the cloud was told
			}
			if !told {
				res.Lost++
				v.add("lost", no, fmt.Sprintf("accepted, not on paper, state %s (%s)", t.State, t.Reason))
			}
		}
		if t.State == spool.StatePrinted && copies == 0 {
			v.add("PRINTED but not on paper", no, fmt.Sprintf("reason %q", t.Reason))
		}
		if !t.State.Terminal() {
			v.add("not terminal at the end", no, string(t.State))
		}
	}

	// The cloud against the spool: every task's last event is its state
	// now, numbered 1..n with no gap, in order of n as it arrived.
	for _, no := range sortedKeys(o.API) {
		t, evs := o.API[no], byTask[no]
		if len(evs) == 0 {
			v.add("task missing in the cloud", no, string(t.State))
			continue
		}
		last := evs[len(evs)-1]
		for _, e := range evs {
			if e.N > last.N {
				last = e
			}
		}
		if last.State != t.State {
			v.add("cloud differs from the spool", no, fmt.Sprintf("cloud's last event (n %d) %s, agent %s", last.N, last.State, t.State))
		}
		for k, e := range evs {
			if k > 0 && e.N <= evs[k-1].N {
				v.add("events out of order", no, fmt.Sprintf("n %d arrived after n %d", e.N, evs[k-1].N))
				break
			}
		}
		ns := make([]int, len(evs))
		for k, e := range evs {
			ns[k] = e.N
		}
		sort.Ints(ns)
		for k, n := range ns {
			if n != k+1 {
				v.add("events missing in the cloud", no, fmt.Sprintf("have n %v", ns))
				break
			}
		}
	}
	for _, no := range sortedKeys(byTask) {
		if _, ok := o.API[no]; !ok {
			v.add("cloud events for a task the agent does not have", no, "")
		}
	}
	if o.OrderWarnings > 0 {
		v.add("event batches out of task_no order", "", fmt.Sprintf("%d batches (the cloud logged them)", o.OrderWarnings))
	}

	// Marked copies come from jobs left in doubt: a dropped connection, a
	// kill (at most one job per printer each), or a spell that cut a
	// connection or stopped the paper mid-job.
	res.MarkedBound = o.DropsFired + o.Kills*o.Printers + o.Spells
	if res.Marked > res.MarkedBound {
		v.add("marked duplicates over their bound", "", fmt.Sprintf("%d marked copies > %d drops + %d kills × %d printers + %d spells", res.Marked, o.DropsFired, o.Kills, o.Printers, o.Spells))
	}
	for _, no := range sortedKeys(o.Refused) {
		v.add("refused", no, o.Refused[no])
	}
	for _, no := range o.Unanswered {
		v.add("LAN submission never answered", no, "")
	}
	for _, no := range o.UnackedJobs {
		v.add("cloud job never acknowledged", no, "")
	}
	for _, e := range o.AgentExits {
		v.add("agent exited on its own", "", e)
	}

	if len(lat) > 0 {
		sort.Float64s(lat)
		var sum float64
		for _, x := range lat {
			sum += x
		}
		res.LatencyMeanMS = round1(sum / float64(len(lat)))
		res.LatencyP50MS = round1(percentile(lat, 0.50))
		res.LatencyP99MS = round1(percentile(lat, 0.99))
		res.LatencyMaxMS = round1(lat[len(lat)-1])
	}
	if len(quiet) > 0 {
		sort.Float64s(quiet)
		res.QuietTasks = len(quiet)
		res.QuietLatencyP50MS = round1(percentile(quiet, 0.50))
		res.QuietLatencyP99MS = round1(percentile(quiet, 0.99))
	}
	res.Violations = v.lines()
	return res
}

// isQuiet reports whether a task that waited from..to saw no spell on
// its printer and no kill of the agent.
func isQuiet(from, to time.Time, printer int, o observed) bool {
	for _, k := range o.KillTimes {
		if !k.Before(from) && !k.After(to) {
			return false
		}
	}
	if printer < 0 || printer >= len(o.Outs) {
		return true
	}
	for _, s := range o.Outs[printer] {
		if s.From.Before(to) && from.Before(s.To) {
			return false
		}
	}
	return true
}

// timedOutExplained returns "" when a TIMED_OUT task's printer, and its
// backup if it has one, were each out at some point of the task's life;
// else what was not.
func timedOutExplained(t apiTask, printer int, outs [][]timeSpan, backups map[int]int) string {
	from, to := t.acceptedAt(), t.endedAt()
	if to.IsZero() {
		to = from.Add(24 * time.Hour)
	}
	wasOut := func(p int) bool {
		if p < 0 || p >= len(outs) {
			return false
		}
		for _, s := range outs[p] {
			if s.From.Before(to) && from.Before(s.To) {
				return true
			}
		}
		return false
	}
	if !wasOut(printer) {
		return fmt.Sprintf("p%d had no spell between %s and %s", printer, from.Format("15:04:05.000"), to.Format("15:04:05.000"))
	}
	if b, ok := backups[printer]; ok && !wasOut(b) {
		return fmt.Sprintf("p%d was out but its backup p%d had no spell between %s and %s", printer, b, from.Format("15:04:05.000"), to.Format("15:04:05.000"))
	}
	return ""
}

// sortedKeys lists m's keys in order, so reports list examples the same
// way every time.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// percentile is the nearest-rank percentile of sorted xs.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// violations groups what went wrong by kind, with a few task numbers each.
type violations struct {
	order []string
	count map[string]int
	ex    map[string][]string
}

func (v *violations) add(kind, taskNo, detail string) {
	if v.count == nil {
		v.count, v.ex = map[string]int{}, map[string][]string{}
	}
	if v.count[kind] == 0 {
		v.order = append(v.order, kind)
	}
	v.count[kind]++
	if len(v.ex[kind]) < maxExamples {
		e := strings.TrimSpace(taskNo + " " + detail)
		if e != "" {
			v.ex[kind] = append(v.ex[kind], e)
		}
	}
}

// lines says each kind once: how many, and the first examples.
func (v *violations) lines() []string {
	out := []string{}
	sort.Strings(v.order)
	for _, k := range v.order {
		s := fmt.Sprintf("%s: %d", k, v.count[k])
		if len(v.ex[k]) > 0 {
			s += " (" + strings.Join(v.ex[k], "; ") + ")"
		}
		out = append(out, s)
	}
	return out
}
