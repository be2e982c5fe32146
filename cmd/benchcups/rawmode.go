package main

// -mode raw (issue 15): the cost of putting printgate's raw port behind an
// unchanged CUPS raw queue. The same N tickets go through `lp -o raw` to two
// queues on the same cupsd, one after the other: one socket:// straight at an
// emulated printer, the other socket:// at printgate's raw port, whose
// printer is another emulator. Both paths are measured from lp's start to
// the emulator's cut, and both are checked: every ticket once, whole, in the
// order lp took them.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"printgate/drivers/printertest"
)

// rawResults is one -mode raw run, written as JSON.
type rawResults struct {
	Started    time.Time      `json:"started"`
	Machine    string         `json:"machine"`
	CUPS       string         `json:"cups_version"`
	TicketSize int            `json:"ticket_bytes"`
	Direct     rawPath        `json:"direct"`
	Printgate  rawPath        `json:"via_printgate"`
	Tasks      map[string]int `json:"printgate_tasks"` // "origin state" → count, warm-up included
	Notes      []string       `json:"notes"`
}

// rawPath is what one path did with the N tickets.
type rawPath struct {
	Path       string   `json:"path"`
	Queue      string   `json:"queue"`
	Device     string   `json:"device_uri"`
	N          int      `json:"n"`
	Accepted   int      `json:"lp_accepted"`
	Refusals   []string `json:"lp_refusal_samples,omitempty"`
	Whole      int      `json:"printed_whole"`
	Once       int      `json:"printed_exactly_once"` // one unmarked whole copy, nothing else
	Extra      int      `json:"extra_copies"`         // copies beyond the first, marked or not
	Missing    int      `json:"not_whole_on_paper"`
	OutOfOrder int      `json:"out_of_order"` // positions where the paper's order differs from lp's
	InOrder    bool     `json:"in_order"`
	Unfinished int      `json:"cups_jobs_not_completed"`
	SubmitSecs float64  `json:"submit_seconds"` // first lp start to last lp exit
	SubmitRate float64  `json:"submits_per_second"`
	TotalSecs  float64  `json:"total_seconds"` // first lp start to last cut
	Throughput float64  `json:"printed_per_second"`
	P50ms      float64  `json:"latency_p50_ms"` // lp start to the ticket's cut
	P95ms      float64  `json:"latency_p95_ms"`
	MaxMs      float64  `json:"latency_max_ms"`
}

// benchRaw runs -mode raw: c.queue prints to an emulator on c.cupsAddr, and
// c.rawQueue to printgate's raw port on c.rawAddr.
func benchRaw(ctx context.Context, c config, log io.Writer) (*rawResults, error) {
	res := &rawResults{Started: time.Now().UTC(), Tasks: map[string]int{},
		Machine: fmt.Sprintf("%s/%s, %d CPUs (shared)", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	res.CUPS = strings.TrimSpace(runTool(ctx, "dpkg-query", "-W", "-f", "${Version}", "cups"))
	res.TicketSize = len(ticketBytes("RD0001", c.items))
	logf := func(format string, a ...any) {
		fmt.Fprintf(log, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}

	direct := cupsQueue{name: c.queue}
	via := cupsQueue{name: c.rawQueue}
	directP := printertest.New(printertest.Options{Name: "direct", Addr: c.cupsAddr})
	if err := directP.ListenTCP(); err != nil {
		return nil, fmt.Errorf("direct emulator on %s: %w", c.cupsAddr, err)
	}
	defer directP.Close()
	pgP := printertest.New(printertest.Options{Name: "printgate"})
	if err := pgP.ListenTCP(); err != nil {
		return nil, fmt.Errorf("printgate's emulator: %w", err)
	}
	defer pgP.Close()

	dir, err := os.MkdirTemp("", "benchcups-raw-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	// lp runs as this user but cupsd reads the files it names: keep them
	// readable.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	agentDir := filepath.Join(dir, "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent dir: %w", err)
	}
	a, err := startAgent(ctx, c.printgate, agentDir, []benchPrinter{{name: "bench", addr: pgP.Addr(), raw: c.rawAddr}})
	if err != nil {
		return nil, err
	}
	defer a.stop()
	defer func() {
		if problems := agentProblems(a.logs.String()); problems != "" {
			res.Notes = append(res.Notes, "printgate logged warnings/errors:\n"+problems)
		}
	}()

	// Warm up both paths (first lp, first backend, first connection), not
	// counted.
	logf("warm-up: 3 tickets through each queue")
	for _, w := range []struct {
		q    cupsQueue
		p    *printertest.Printer
		pref string
	}{{direct, directP, "WD"}, {via, pgP, "WV"}} {
		var tags []string
		for i := range 3 {
			tag := fmt.Sprintf("%s%d", w.pref, i)
			f, err := writeJob(dir, tag, c.items)
			if err != nil {
				return res, err
			}
			if r := w.q.submit(ctx, tag, f); !r.ok {
				return res, fmt.Errorf("CUPS refused the warm-up job (is queue %s there?): %s", w.q.name, r.msg)
			}
			tags = append(tags, tag)
		}
		if n := waitWhole(ctx, w.p, tags, c.items, 60*time.Second); n < len(tags) {
			return res, fmt.Errorf("queue %s printed %d of %d warm-up tickets in 60 s: %s", w.q.name, n, len(tags), w.q.printerLong(ctx))
		}
	}

	logf("direct: %d tickets through lp -d %s (socket://%s, the emulator)", c.n, direct.name, c.cupsAddr)
	res.Direct, err = rawRun(ctx, c, direct, directP, dir, "RD")
	if err != nil {
		return res, err
	}
	res.Direct.Path, res.Direct.Device = "CUPS → emulator", "socket://"+c.cupsAddr
	logf("direct: %.1f printed/s, p50 %.0f ms", res.Direct.Throughput, res.Direct.P50ms)
	logf("via printgate: %d tickets through lp -d %s (socket://%s, printgate's raw port)", c.n, via.name, c.rawAddr)
	res.Printgate, err = rawRun(ctx, c, via, pgP, dir, "RV")
	if err != nil {
		return res, err
	}
	res.Printgate.Path, res.Printgate.Device = "CUPS → printgate raw port → emulator", "socket://"+c.rawAddr
	logf("via printgate: %.1f printed/s, p50 %.0f ms", res.Printgate.Throughput, res.Printgate.P50ms)

	tasks, err := a.allTasks(ctx, "bench")
	if err != nil {
		return res, err
	}
	for _, t := range tasks {
		k := t.Origin + " " + t.State
		if t.PossibleDuplicate {
			k += " possible_duplicate"
		}
		if t.Truncated {
			k += " truncated"
		}
		res.Tasks[k]++
	}
	if want := c.n + 3; res.Tasks["raw PRINTED"] != want {
		res.Notes = append(res.Notes, fmt.Sprintf("printgate lists %s, want %d raw PRINTED (warm-up included)", answers(res.Tasks), want))
	}
	return res, nil
}

// rawRun sends c.n tickets tagged prefix0000... through q with lp, one after
// another as fast as lp returns, waits for them on p and for CUPS to finish
// the jobs, and reads the paper.
func rawRun(ctx context.Context, c config, q cupsQueue, p *printertest.Printer, dir, prefix string) (rawPath, error) {
	s := rawPath{Queue: q.name, N: c.n}
	tags := make([]string, c.n)
	files := make([]string, c.n)
	for i := range c.n {
		tags[i] = fmt.Sprintf("%s%04d", prefix, i)
		f, err := writeJob(dir, tags[i], c.items)
		if err != nil {
			return s, err
		}
		files[i] = f
	}
	var accepted []string
	at := map[string]time.Time{}
	first := time.Now()
	for i, tag := range tags {
		start := time.Now()
		r := q.submit(ctx, tag, files[i])
		if ctx.Err() != nil {
			return s, ctx.Err()
		}
		if !r.ok {
			if len(s.Refusals) < 5 {
				s.Refusals = append(s.Refusals, tag+": "+firstLine(r.msg))
			}
			continue
		}
		s.Accepted++
		accepted = append(accepted, tag)
		at[tag] = start
	}
	s.SubmitSecs = time.Since(first).Seconds()
	s.SubmitRate = float64(c.n) / s.SubmitSecs
	waitWhole(ctx, p, accepted, c.items, c.drainTimeout)
	// CUPS completes a job once its backend is done: wait for that too, so
	// a job it would resend is on paper before the paper is read.
	deadline := time.Now().Add(c.drainTimeout)
	for s.Unfinished = q.notCompleted(ctx); s.Unfinished > 0 && time.Now().Before(deadline) && ctx.Err() == nil; s.Unfinished = q.notCompleted(ctx) {
		time.Sleep(200 * time.Millisecond)
	}

	paper := readPaper(p)
	var ds []time.Duration
	var last time.Time
	for _, tag := range accepted {
		pc := paper[tag]
		if !pc.Complete(c.items) || pc.EndAt.IsZero() {
			s.Missing++
			continue
		}
		s.Whole++
		if pc.Plain == 1 && pc.Marked == 0 {
			s.Once++
		}
		s.Extra += pc.Plain + pc.Marked - 1
		ds = append(ds, pc.EndAt.Sub(at[tag]))
		if pc.EndAt.After(last) {
			last = pc.EndAt
		}
	}
	if s.Whole > 0 {
		s.TotalSecs = last.Sub(first).Seconds()
		s.Throughput = float64(s.Whole) / s.TotalSecs
	}
	s.P50ms = ms(percentile(ds, 0.50))
	s.P95ms = ms(percentile(ds, 0.95))
	s.MaxMs = ms(percentile(ds, 1))

	// Order: the headers of this run on paper, in paper order, against the
	// order lp took the jobs in.
	var onPaper []string
	for _, tk := range p.Tickets() {
		for _, line := range tk.Lines {
			for _, m := range headerRE.FindAllStringSubmatch(line, -1) {
				if strings.HasPrefix(m[1], prefix) {
					onPaper = append(onPaper, m[1])
				}
			}
		}
	}
	for i := range max(len(onPaper), len(accepted)) {
		if i >= len(onPaper) || i >= len(accepted) || onPaper[i] != accepted[i] {
			s.OutOfOrder++
		}
	}
	s.InOrder = s.OutOfOrder == 0
	return s, nil
}

// listedTask is the part of a listed task -mode raw counts.
type listedTask struct {
	TaskNo            string `json:"task_no"`
	State             string `json:"state"`
	Origin            string `json:"origin"`
	PossibleDuplicate bool   `json:"possible_duplicate"`
	Truncated         bool   `json:"truncated"`
}

// allTasks pages through GET /api/v1/tasks?printer=printer.
func (a *agent) allTasks(ctx context.Context, printer string) ([]listedTask, error) {
	var all []listedTask
	after := ""
	for {
		var page struct {
			Tasks []listedTask `json:"tasks"`
			Next  *uint64      `json:"next"`
		}
		if err := a.getJSON(ctx, "/api/v1/tasks?limit=1000&printer="+printer+after, &page); err != nil {
			return all, err
		}
		all = append(all, page.Tasks...)
		if page.Next == nil {
			return all, nil
		}
		after = fmt.Sprintf("&after=%d", *page.Next)
	}
}

// rawFailed says what -mode raw saw go wrong on paper, empty when every
// ticket of both paths printed exactly once and in order.
func rawFailed(r *rawResults) string {
	var bad []string
	for _, p := range []rawPath{r.Direct, r.Printgate} {
		if p.Once != p.N || !p.InOrder || p.Extra > 0 || p.Unfinished > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d of %d printed exactly once, %d extra copies, %d out of order, %d CUPS jobs unfinished",
				p.Path, p.Once, p.N, p.Extra, p.OutOfOrder, p.Unfinished))
		}
	}
	return strings.Join(bad, "; ")
}

// printRawTable prints -mode raw's results with the printgate path as a
// ratio of the direct one.
func printRawTable(w io.Writer, r *rawResults) {
	d, v := r.Direct, r.Printgate
	fmt.Fprintf(w, "\nCUPS %s raw queue: direct to the emulator against through printgate's raw port — %s, ticket %d bytes, %s\n\n",
		r.CUPS, r.Machine, r.TicketSize, r.Started.Format(time.RFC3339))
	fmt.Fprintln(w, "| measure | CUPS → emulator | CUPS → printgate raw port → emulator | via printgate / direct |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	row := func(name string, a, b float64, unit string) {
		ratio := "—"
		if a > 0 {
			ratio = fmt.Sprintf("%.2f×", b/a)
		}
		fmt.Fprintf(w, "| %s | %.1f %s | %.1f %s | %s |\n", name, a, unit, b, unit, ratio)
	}
	fmt.Fprintf(w, "| lp accepted | %d / %d | %d / %d | |\n", d.Accepted, d.N, v.Accepted, v.N)
	fmt.Fprintf(w, "| printed exactly once, whole | %d | %d | |\n", d.Once, v.Once)
	fmt.Fprintf(w, "| in lp's order | %s | %s | |\n", yesNo(d), yesNo(v))
	row("lp submits/s (first lp → last lp)", d.SubmitRate, v.SubmitRate, "/s")
	row("printed/s (first lp → last cut)", d.Throughput, v.Throughput, "/s")
	row("latency lp → cut p50", d.P50ms, v.P50ms, "ms")
	row("latency lp → cut p95", d.P95ms, v.P95ms, "ms")
	row("latency lp → cut max", d.MaxMs, v.MaxMs, "ms")
	fmt.Fprintf(w, "\nprintgate's tasks: %s\n", answers(r.Tasks))
	for _, p := range []rawPath{d, v} {
		for _, ref := range p.Refusals {
			fmt.Fprintf(w, "lp refused (%s): %s\n", p.Path, ref)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
}

func yesNo(p rawPath) string {
	if p.InOrder {
		return "yes"
	}
	return fmt.Sprintf("no (%d out of place)", p.OutOfOrder)
}
