package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"printgate/agent"
	"printgate/drivers/printertest"
	"printgate/spool"
	"printgate/sync/wire"
)

// apiTask is a task as GET /api/v1/tasks shows it.
type apiTask struct {
	TaskNo            string        `json:"task_no"`
	Printer           string        `json:"printer"`
	State             spool.State   `json:"state"`
	Reason            string        `json:"reason"`
	PossibleDuplicate bool          `json:"possible_duplicate"`
	Origin            string        `json:"origin"`
	ReprintOf         string        `json:"reprint_of"`
	Truncated         bool          `json:"truncated"`
	Timeline          []timelineRow `json:"timeline"`
}

// timelineRow is one row of a task's timeline, as the API shows it.
type timelineRow struct {
	State  spool.State `json:"state"`
	At     time.Time   `json:"at"`
	Reason string      `json:"reason"`
}

// heldAfterUnknowns reports whether t was held for a manager because the
// printer took it maxUnknown times without confirming a copy (the lane's
// max_unknown): each such attempt ended in doubt, which the run's mid-job
// drops cause. Such a task times out unprinted by design, told, with no
// printer out.
func (t apiTask) heldAfterUnknowns() bool {
	unknowns := 0
	for _, row := range t.Timeline {
		switch {
		case row.State == spool.StateUnknown:
			unknowns++
		case row.State == spool.StateHeld && row.Reason == agent.ReasonRepeatedUnknown:
			return unknowns >= maxUnknown
		}
	}
	return false
}

// maxUnknown is the agent's default max_unknown, which the run's config
// keeps.
const maxUnknown = 2

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
	Events []wire.Event
	// OrderWarnings counts event batches the cloud saw out of task_no order.
	OrderWarnings int
	// Tickets is everything on paper, uncut text included; PaperOf is the
	// printer of each (same length; empty: unknown).
	Tickets []printertest.Ticket
	PaperOf []int
	// Raw is what the POS workers knew of each raw job, by tag.
	Raw map[string]rawJob
	// RawTags are the tags read from the stored payload of every task the
	// API lists with origin raw or a RAW_ task_no, by task_no ("" when it
	// had none or could not be read).
	RawTags map[string]string
	// Outs are each printer's spells (offline, paper out, flapping).
	Outs    [][]timeSpan
	Backups map[int]int
	// DropsFired, Kills and Spells bound the marked duplicates; Printers
	// is how many jobs one kill can leave in doubt.
	DropsFired, Kills, Spells, Printers int
	AgentExits                          []string
	// KillTimes are when the agent was SIGKILLed.
	KillTimes []time.Time
	// Retried are the tasks whose Retry was clicked twice at once, with
	// where each click led on the page.
	Retried map[string][]string
	// Reloads are the applied config reloads, from when each was asked
	// for to its answer.
	Reloads []timeSpan
	End     time.Time // when the drain ended
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
	// TimedOutHeld are timed-out tasks the lane had held for a manager
	// after max_unknown attempts that each ended in doubt (mid-job drops).
	TimedOutHeld int `json:"timed_out_held"`
	Failed       int `json:"failed"`
	Canceled     int `json:"canceled"`

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
	// AcksDropped counts the events batches whose events_ack the cloud
	// lost on purpose; the link resends them after its ack timeout.
	AcksDropped int `json:"cloud_acks_dropped"`
	// RetriedTwice counts the double clicks on Retry (finished tasks);
	// RetryVersions the new versions they made (at most one each).
	RetriedTwice  int `json:"retries_clicked_twice"`
	RetryVersions int `json:"retry_versions"`

	// Raw jobs (the raw ports): sent at least once, acknowledged by an
	// orderly close, extra attempts, first attempts cut short on purpose,
	// never sent (the load ended first), tasks the API lists as raw.
	RawSent    int `json:"raw_sent"`
	RawAcked   int `json:"raw_acknowledged"`
	RawResends int `json:"raw_resends"`
	RawAborted int `json:"raw_aborted"`
	RawNotSent int `json:"raw_not_sent"`
	RawTasks   int `json:"raw_tasks"`
	// RawPrinted are acknowledged tags on paper; RawMarked copies under
	// the POSSIBLE DUPLICATE banner; RawTruncated copies between the
	// INCOMPLETE JOB lines; RawTold acknowledged tags not on paper whose
	// failure was told.
	RawPrinted   int `json:"raw_printed"`
	RawMarked    int `json:"raw_marked_duplicates"`
	RawTruncated int `json:"raw_truncated"`
	RawTold      int `json:"raw_told"`
	// RawUnacked are tags sent but never acknowledged (the POS still
	// owes them: reported, not a violation), RawUnackedPrinted those of
	// them that came out anyway; RawUnackedTags lists the first few.
	RawUnacked        int      `json:"raw_unacknowledged"`
	RawUnackedPrinted int      `json:"raw_unacknowledged_printed"`
	RawUnackedTags    []string `json:"raw_unacknowledged_tags,omitempty"`
	// RawBlind are the jobs sent write-and-close (the POS never hears
	// back), RawBlindPrinted those printed whole or told failed, and
	// RawBlindAtKill those absent from paper that were written within
	// rawBlindKillWindow before a SIGKILL (excused: not yet stored).
	RawBlind        int `json:"raw_write_and_close"`
	RawBlindPrinted int `json:"raw_write_and_close_printed"`
	RawBlindAtKill  int `json:"raw_write_and_close_lost_at_kill"`

	// KeptOpenResult: the reloads and the kept-open raw client.
	KeptOpenResult

	Violations []string `json:"violations"`
}

// maxExamples bounds the task numbers a violation lists.
const maxExamples = 8

// check computes the table and the violations from what the run saw.
func check(o observed) *Result {
	res := &Result{Accepted: len(o.Accepted), Refused: len(o.Refused), Kills: o.Kills, DropsFired: o.DropsFired, Spells: o.Spells}
	res.Reloads = len(o.Reloads)
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
	byTask := map[string][]wire.Event{}
	for _, e := range o.Events {
		byTask[e.TaskNo] = append(byTask[e.TaskNo], e)
	}
	res.CloudEvents = len(o.Events)

	// A retry's version prints the ticket of the task it retries, under
	// that task's number: its marked copy is flagged on the version.
	versionFlagged := map[string]bool{}
	for _, t := range o.API {
		if t.ReprintOf != "" && t.PossibleDuplicate {
			versionFlagged[t.ReprintOf] = true
		}
	}

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
		if marked[no] > 0 && !t.PossibleDuplicate && !versionFlagged[no] {
			v.add("marked copy without the flag", no, "a copy under the banner but possible_duplicate is false")
		}
		switch t.State {
		case spool.StateTimedOut:
			res.TimedOut++
			if copies > 0 {
				res.TimedOutOnPaper++
			}
			if o.DropsFired > 0 && t.heldAfterUnknowns() {
				// Its copies were cut mid-job until the lane stopped
				// reprinting it and held it for a manager: a decision,
				// told at the deadline, not a printer out.
				res.TimedOutHeld++
			} else if why := timedOutExplained(t, printer, o.Outs, o.Backups); why != "" {
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
	// A retry of a task that was sent is printed marked: one copy each.
	checkRetries(o, res, &v)
	res.MarkedBound = o.DropsFired + o.Kills*o.Printers + o.Spells + res.RetryVersions
	if res.Marked > res.MarkedBound {
		v.add("marked duplicates over their bound", "", fmt.Sprintf("%d marked copies > %d drops + %d kills × %d printers + %d spells + %d retries", res.Marked, o.DropsFired, o.Kills, o.Printers, o.Spells, res.RetryVersions))
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
	checkRaw(o, byTask, res, &v)

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

// rawCopy is one raw tag line on paper.
type rawCopy struct {
	Printer int // -1: unknown
	// Marked: under the POSSIBLE DUPLICATE banner; Truncated: after an
	// INCOMPLETE JOB banner; Cut: its ticket was cut.
	Marked, Truncated, Cut bool
}

// whole reports whether the copy is the job as sent: not a truncated
// one, and cut.
func (c rawCopy) whole() bool { return c.Cut && !c.Truncated }

// rawCopies finds every raw tag line on paper. A banner applies to the
// next tag line, as printertest.Copies counts: each raw job holds one.
func rawCopies(tickets []printertest.Ticket, paperOf []int) map[string][]rawCopy {
	out := map[string][]rawCopy{}
	for k, tk := range tickets {
		printer := -1
		if len(paperOf) == len(tickets) {
			printer = paperOf[k]
		}
		var marked, incomplete bool
		for _, line := range tk.Lines {
			switch {
			case strings.Contains(line, "END OF INCOMPLETE JOB"):
				incomplete = false
			case strings.Contains(line, "INCOMPLETE JOB"):
				incomplete = true
			case strings.Contains(line, "POSSIBLE DUPLICATE"):
				marked = true
			}
			if f := strings.Fields(line); len(f) == 2 && f[0] == rawTagPrefix {
				out[f[1]] = append(out[f[1]], rawCopy{Printer: printer, Marked: marked, Truncated: incomplete, Cut: tk.Cut != ""})
				marked, incomplete = false, false
			}
		}
	}
	return out
}

// checkRaw checks the raw jobs: every acknowledged tag printed whole on
// its printer or its backup (or its failure told), at most one unmarked
// copy of any tag, nothing printed that no POS sent, and the API listing
// every raw job as a task of origin raw. A tag never acknowledged may be
// absent or printed once; it is counted, not failed.
func checkRaw(o observed, byTask map[string][]wire.Event, res *Result, v *violations) {
	byTag := map[string][]apiTask{}
	for _, no := range sortedKeys(o.API) {
		t := o.API[no]
		isRaw := t.Origin == string(spool.OriginRaw) || strings.HasPrefix(no, "RAW_")
		if !isRaw {
			continue
		}
		res.RawTasks++
		if t.Origin != string(spool.OriginRaw) {
			v.add("raw task without origin raw", no, fmt.Sprintf("origin %q", t.Origin))
		}
		if !strings.HasPrefix(no, "RAW_"+t.Printer+"_") {
			v.add("raw task numbered otherwise", no, "want RAW_"+t.Printer+"_<time>_<n>")
		}
		if !t.State.Terminal() {
			v.add("raw task not terminal at the end", no, string(t.State))
		}
		tag, read := o.RawTags[no]
		switch {
		case !read || tag == "":
			v.add("raw task without a tag", no, "its payload could not be read or carries no tag line")
			continue
		case o.Raw[tag].Attempts == 0:
			v.add("raw task no POS sent", no, "tag "+tag)
		}
		byTag[tag] = append(byTag[tag], t)
	}

	copies := rawCopies(o.Tickets, o.PaperOf)
	for _, tag := range sortedKeys(copies) {
		j, sent := o.Raw[tag]
		if !sent || j.Attempts == 0 {
			v.add("raw printed but never sent", tag, fmt.Sprintf("%d copies", len(copies[tag])))
			continue
		}
		var plain, marked, truncated int
		for _, c := range copies[tag] {
			switch {
			case c.Truncated:
				truncated++
			case c.Marked:
				marked++
			default:
				plain++
			}
			b, hasBackup := o.Backups[j.Printer]
			if c.Printer >= 0 && c.Printer != j.Printer && (!hasBackup || c.Printer != b) {
				v.add("raw printed on another printer", tag, fmt.Sprintf("sent to p%d, printed on p%d", j.Printer, c.Printer))
			}
		}
		res.RawMarked += marked
		res.RawTruncated += truncated
		if plain > 1 {
			v.add("raw unmarked duplicates", tag, fmt.Sprintf("%d copies without the POSSIBLE DUPLICATE banner (%d attempts, acknowledged %v)", plain, j.Attempts, j.Acked))
		}
		if marked > 0 && !anyTask(byTag[tag], func(t apiTask) bool { return t.PossibleDuplicate }) {
			v.add("raw marked copy without the flag", tag, "no task of the tag has possible_duplicate")
		}
		if truncated > 0 && !anyTask(byTag[tag], func(t apiTask) bool { return t.Truncated }) {
			v.add("raw INCOMPLETE copy without the flag", tag, "no task of the tag is truncated")
		}
	}

	for _, tag := range sortedKeys(o.Raw) {
		j := o.Raw[tag]
		if j.KeptOpen {
			checkKeptOpen(o, tag, j, copies[tag], byTag[tag], byTask, res, v)
			continue
		}
		if j.Attempts == 0 {
			res.RawNotSent++
			continue
		}
		res.RawSent++
		res.RawResends += j.Attempts - 1
		if j.Aborted {
			res.RawAborted++
		}
		onPaper := len(copies[tag]) > 0
		wholeOrTold := func() bool {
			for _, c := range copies[tag] {
				if c.whole() {
					return true
				}
			}
			return anyTask(byTag[tag], func(t apiTask) bool {
				evs := byTask[t.TaskNo]
				failed := t.State == spool.StateTimedOut || t.State == spool.StateFailed || t.State == spool.StateCanceled
				return failed && len(evs) > 0 && evs[len(evs)-1].State == t.State
			})
		}
		if j.Blind && !j.Acked && !j.SentAt.IsZero() {
			// Written and closed: the POS takes it for printed.
			res.RawBlind++
			switch {
			case wholeOrTold():
				res.RawBlindPrinted++
			case killedWithin(o.KillTimes, j.SentAt, rawBlindKillWindow):
				res.RawBlindAtKill++
			default:
				v.add("raw write-and-close job lost", tag, fmt.Sprintf("p%d, written at %s, %d copies on paper, %d tasks", j.Printer, j.SentAt.Format("15:04:05.000"), len(copies[tag]), len(byTag[tag])))
			}
			continue
		}
		if !j.Acked {
			res.RawUnacked++
			if onPaper {
				res.RawUnackedPrinted++
			}
			if len(res.RawUnackedTags) < maxExamples {
				res.RawUnackedTags = append(res.RawUnackedTags, fmt.Sprintf("%s (p%d, %d attempts, on paper %v)", tag, j.Printer, j.Attempts, onPaper))
			}
			continue
		}
		res.RawAcked++
		if len(byTag[tag]) == 0 {
			v.add("raw job acknowledged but not in the API", tag, fmt.Sprintf("p%d", j.Printer))
		}
		if onPaper {
			res.RawPrinted++
		}
		whole := false
		for _, c := range copies[tag] {
			whole = whole || c.whole()
		}
		if whole {
			continue
		}
		told := anyTask(byTag[tag], func(t apiTask) bool {
			evs := byTask[t.TaskNo]
			failed := t.State == spool.StateTimedOut || t.State == spool.StateFailed || t.State == spool.StateCanceled
			return failed && len(evs) > 0 && evs[len(evs)-1].State == t.State
		})
		if told {
			res.RawTold++
			continue
		}
		v.add("raw job acknowledged, not printed whole", tag, fmt.Sprintf("p%d, %d copies on paper, %d tasks", j.Printer, len(copies[tag]), len(byTag[tag])))
	}
}

// killedWithin reports whether the agent was killed within d after at.
func killedWithin(kills []time.Time, at time.Time, d time.Duration) bool {
	for _, k := range kills {
		if !k.Before(at) && k.Sub(at) <= d {
			return true
		}
	}
	return false
}

// anyTask reports whether f holds for one of ts.
func anyTask(ts []apiTask, f func(apiTask) bool) bool {
	for _, t := range ts {
		if f(t) {
			return true
		}
	}
	return false
}
