package main

// -mode raw: the cost of putting printgate's raw port behind an
// unchanged CUPS raw queue. The same N tickets go through `lp -o raw` to two
// queues on the same cupsd, one after the other: one socket:// straight at an
// emulated printer, the other socket:// at printgate's raw port, whose
// printer is another emulator. Each path runs twice: flooded (the next lp as
// soon as the last returns, as a busy POS prints; latency is then mostly
// waiting in CUPS's queue) and one at a time (the next lp once the last
// ticket is cut: the cost of one job on an idle path). Latency is from lp's
// start to the emulator's cut, and every ticket is checked: once, whole, in
// the order lp took them.

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
	DirectOne  rawPath        `json:"direct_one_at_a_time"`
	ViaOne     rawPath        `json:"via_printgate_one_at_a_time"`
	Tasks      map[string]int `json:"printgate_tasks"` // "origin state" → count, warm-up included
	Notes      []string       `json:"notes"`
}

// rawPath is what one path did with the N tickets.
type rawPath struct {
	Path       string   `json:"path"`
	OneAtATime bool     `json:"one_at_a_time"` // the next lp waited for the last ticket's cut
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

	for _, run := range []struct {
		out  *rawPath
		q    cupsQueue
		p    *printertest.Printer
		pref string
		one  bool
		path string
		dev  string
	}{
		{&res.Direct, direct, directP, "RD", false, "CUPS → emulator", c.cupsAddr},
		{&res.Printgate, via, pgP, "RV", false, "CUPS → printgate raw port → emulator", c.rawAddr},
		{&res.DirectOne, direct, directP, "OD", true, "CUPS → emulator", c.cupsAddr},
		{&res.ViaOne, via, pgP, "OV", true, "CUPS → printgate raw port → emulator", c.rawAddr},
	} {
		how := "flooded"
		if run.one {
			how = "one at a time"
		}
		logf("%s, %s: %d tickets through lp -d %s (socket://%s)", run.path, how, c.n, run.q.name, run.dev)
		*run.out, err = rawRun(ctx, c, run.q, run.p, dir, run.pref, run.one)
		if err != nil {
			return res, err
		}
		run.out.Path, run.out.Device = run.path, "socket://"+run.dev
		logf("%s, %s: %.1f printed/s, p50 %.0f ms, %d of %d once", run.path, how, run.out.Throughput, run.out.P50ms, run.out.Once, run.out.N)
	}

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
	if want := 2*c.n + 3; res.Tasks["raw PRINTED"] != want {
		res.Notes = append(res.Notes, fmt.Sprintf("printgate lists %s, want %d raw PRINTED (warm-up included)", answers(res.Tasks), want))
	}
	return res, nil
}

// rawRun sends c.n tickets tagged prefix0000... through q with lp, one after
// another as fast as lp returns or, with one, each once the last is cut;
// waits for them on p and for CUPS to finish the jobs, and reads the paper.
func rawRun(ctx context.Context, c config, q cupsQueue, p *printertest.Printer, dir, prefix string, one bool) (rawPath, error) {
	s := rawPath{Queue: q.name, N: c.n, OneAtATime: one}
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
	base := len(p.Tickets()) // tickets of earlier runs on this printer
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
		if one {
			// Each job is one ticket: wait for this one's cut (a lost or
			// doubled one shows in the checks below, not here).
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			p.WaitTickets(wctx, base+len(accepted))
			cancel()
		}
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

	s.OutOfOrder = outOfOrder(p.Tickets(), prefix, accepted)
	s.InOrder = s.OutOfOrder == 0
	return s, nil
}

// outOfOrder compares the headers of one run on paper (tags starting with
// prefix, in paper order, a repeat included) with the order lp took the
// jobs in, and counts the positions where they differ.
func outOfOrder(tickets []printertest.Ticket, prefix string, accepted []string) int {
	var onPaper []string
	for _, tk := range tickets {
		for _, line := range tk.Lines {
			for _, m := range headerRE.FindAllStringSubmatch(line, -1) {
				if strings.HasPrefix(m[1], prefix) {
					onPaper = append(onPaper, m[1])
				}
			}
		}
	}
	n := 0
	for i := range max(len(onPaper), len(accepted)) {
		if i >= len(onPaper) || i >= len(accepted) || onPaper[i] != accepted[i] {
			n++
		}
	}
	return n
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
	for _, p := range []rawPath{r.Direct, r.Printgate, r.DirectOne, r.ViaOne} {
		if p.N == 0 {
			continue
		}
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
	fmt.Fprintf(w, "\nCUPS %s raw queue: direct to the emulator against through printgate's raw port — %s, ticket %d bytes, %s\n",
		r.CUPS, r.Machine, r.TicketSize, r.Started.Format(time.RFC3339))
	for _, pair := range []struct {
		title string
		d, v  rawPath
	}{
		{"flooded: the next lp as soon as the last returns", r.Direct, r.Printgate},
		{"one at a time: the next lp once the last ticket is cut", r.DirectOne, r.ViaOne},
	} {
		d, v := pair.d, pair.v
		fmt.Fprintf(w, "\n%d tickets, %s\n\n", d.N, pair.title)
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
		for _, p := range []rawPath{d, v} {
			for _, ref := range p.Refusals {
				fmt.Fprintf(w, "lp refused (%s): %s\n", p.Path, ref)
			}
		}
	}
	fmt.Fprintf(w, "\nprintgate's tasks: %s\n", answers(r.Tasks))
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
