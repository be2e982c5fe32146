package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"printgate/drivers/printertest"
)

// results is everything one run measured, written as JSON.
type results struct {
	Started    time.Time   `json:"started"`
	Seed       uint64      `json:"seed"`
	Machine    string      `json:"machine"`
	CUPS       string      `json:"cups_version"`
	TicketSize int         `json:"ticket_bytes"`
	Seq        [2]seqStats `json:"sequential"` // CUPS, printgate
	Burst      [2]burst    `json:"burst"`
	Kill       [2]kill     `json:"killed_mid_job"`
	Chaos      chaos       `json:"chaos"`
	Notes      []string    `json:"notes"`
}

// seqStats is N tickets submitted one after another.
type seqStats struct {
	System     string  `json:"system"`
	N          int     `json:"n"`
	Accepted   int     `json:"accepted"`
	Printed    int     `json:"printed_whole"`
	SubmitSecs float64 `json:"submit_seconds"` // first submit to last answer
	SubmitRate float64 `json:"submits_per_second"`
	TotalSecs  float64 `json:"total_seconds"` // first submit to last ticket cut
	Throughput float64 `json:"printed_per_second"`
	P50ms      float64 `json:"latency_p50_ms"` // submit start to the ticket's cut
	P99ms      float64 `json:"latency_p99_ms"`
	MaxMs      float64 `json:"latency_max_ms"`
}

// burst is a burst from concurrent submitters.
type burst struct {
	System     string         `json:"system"`
	N          int            `json:"n"`
	Submitters int            `json:"submitters"`
	Accepted   int            `json:"accepted"`
	Refused    int            `json:"refused"`
	Answers    map[string]int `json:"answers"` // exit status or HTTP code → count
	Refusals   []string       `json:"refusal_samples,omitempty"`
	SubmitSecs float64        `json:"submit_seconds"`
	Printed    int            `json:"printed_whole"`
	Drained    float64        `json:"drain_seconds"` // first submit to last printed
	LeftOver   int            `json:"left_in_queue"` // accepted jobs still not finished when the phase ended
}

// kill is the printer killed in the middle of one job.
type kill struct {
	System       string `json:"system"`
	JobBytes     int    `json:"job_bytes"`
	CutAfter     int    `json:"cut_after_bytes"`
	ReportAtBack string `json:"report_when_printer_returned"`
	ReportEnd    string `json:"report_at_end"`
	StateEnd     string `json:"state_at_end"`
	Printer      string `json:"printer_report_at_end"`
	PlainCopies  int    `json:"unmarked_copies_on_paper"`
	MarkedCopies int    `json:"marked_copies_on_paper"`
	WholeCopies  int    `json:"whole_copies_on_paper"`
	Partial      bool   `json:"partial_on_paper"`
	Paper        string `json:"paper"`
}

// chaos is the push-and-forget client against printgate under the same
// seeded faults.
type chaos struct {
	N             int            `json:"n"`
	Rate          float64        `json:"tickets_per_second"`
	DropRate      float64        `json:"drop_rate"`
	OfflineRate   float64        `json:"offline_rate_per_second"`
	Naive         chaosSide      `json:"naive"`
	Printgate     chaosSide      `json:"printgate"`
	PrintgateEnds map[string]int `json:"printgate_states"`
}

// chaosSide is one path's outcome under chaos.
type chaosSide struct {
	Drops         int      `json:"connections_dropped_mid_job"`
	DroppedTags   []string `json:"dropped_jobs"` // tag of each job cut, in order (a resent job can be cut again)
	Spells        int      `json:"offline_spells"`
	Accepted      int      `json:"accepted"` // the client believed it went out (naive) / 202 (printgate)
	ClientErrors  int      `json:"client_saw_error"`
	Whole         int      `json:"printed_whole"`
	PartialOnly   int      `json:"partial_only"` // some lines on paper, never a whole copy
	Missing       int      `json:"nothing_on_paper"`
	Unmarked      int      `json:"unmarked_duplicates"` // tags with more than one unmarked header
	Marked        int      `json:"marked_copies"`
	SilentlyLost  int      `json:"lost_silently"` // accepted, not whole on paper, nobody told
	ReportedFail  int      `json:"reported_not_printed"`
	DrainSecs     float64  `json:"drain_seconds"`
	SubmitRefused int      `json:"refused_at_intake"`
}

// bench runs every phase and returns what it measured, as far as it got.
func bench(ctx context.Context, c config, log io.Writer) (*results, error) {
	res := &results{Started: time.Now().UTC(), Seed: c.seed,
		Machine: fmt.Sprintf("%s/%s, %d CPUs (shared)", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	res.CUPS = strings.TrimSpace(runTool(ctx, "dpkg-query", "-W", "-f", "${Version}", "cups"))
	res.TicketSize = len(ticketBytes("CS0001", c.items))
	logf := func(format string, a ...any) {
		fmt.Fprintf(log, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	logf("seed %d (replay with -seed %d)", c.seed, c.seed)

	q := cupsQueue{name: c.queue}
	cupsP := printertest.New(printertest.Options{Name: "cups", Addr: c.cupsAddr})
	if err := cupsP.ListenTCP(); err != nil {
		return nil, fmt.Errorf("CUPS emulator on %s: %w", c.cupsAddr, err)
	}
	defer cupsP.Close()
	pgP := printertest.New(printertest.Options{Name: "printgate"})
	naiveP := printertest.New(printertest.Options{Name: "naive"})
	chaosP := printertest.New(printertest.Options{Name: "printgate-chaos"})
	for _, p := range []*printertest.Printer{pgP, naiveP, chaosP} {
		if err := p.ListenTCP(); err != nil {
			return nil, fmt.Errorf("emulator %s: %w", p.Name(), err)
		}
		defer p.Close()
	}
	jobLen := len(ticketBytes("CC0001", c.items))
	naiveProxy, err := newChaosProxy(naiveP.Addr(), c.seed, c.dropRate, jobLen)
	if err != nil {
		return nil, err
	}
	defer naiveProxy.close()
	pgProxy, err := newChaosProxy(chaosP.Addr(), c.seed, c.dropRate, jobLen)
	if err != nil {
		return nil, err
	}
	defer pgProxy.close()

	dir, err := os.MkdirTemp("", "benchcups-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	agentDir := filepath.Join(dir, "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent dir: %w", err)
	}
	a, err := startAgent(ctx, c.printgate, agentDir, []benchPrinter{{name: "bench", addr: pgP.Addr()}, {name: "chaos", addr: pgProxy.addr}})
	if err != nil {
		return nil, err
	}
	defer a.stop()
	defer func() {
		if problems := agentProblems(a.logs.String()); problems != "" {
			res.Notes = append(res.Notes, "printgate logged warnings/errors:\n"+problems)
		}
	}()

	// Warm up both paths (first lp, first connection), not counted.
	logf("warm-up: 3 tickets each way")
	var warm []string
	for i := range 3 {
		tag := fmt.Sprintf("WC%d", i)
		f, err := writeJob(dir, tag, c.items)
		if err != nil {
			return res, err
		}
		if r := q.submit(ctx, tag, f); !r.ok {
			return res, fmt.Errorf("CUPS refused the warm-up job (is queue %s there?): %s", c.queue, r.msg)
		}
		tag2 := fmt.Sprintf("WP%d", i)
		if code, err := a.submit(ctx, tag2, "bench", ticketBytes(tag2, c.items)); code != 202 {
			return res, fmt.Errorf("printgate refused the warm-up task: HTTP %d %v", code, err)
		}
		warm = append(warm, tag)
	}
	if n := waitWhole(ctx, cupsP, warm, c.items, 30*time.Second); n < len(warm) {
		return res, fmt.Errorf("CUPS printed %d of %d warm-up tickets in 30 s: %s", n, len(warm), q.printerLong(ctx))
	}
	waitWhole(ctx, pgP, []string{"WP0", "WP1", "WP2"}, c.items, 30*time.Second)

	// 1. One after another.
	if c.phases["seq"] {
		logf("sequential: %d tickets through lp", c.n)
		res.Seq[0], err = seqCUPS(ctx, c, q, cupsP, dir)
		if err != nil {
			return res, err
		}
		logf("sequential: %d tickets through printgate", c.n)
		res.Seq[1] = seqPrintgate(ctx, c, a, pgP)
	}

	// 2. Burst from concurrent submitters.
	if c.phases["burst"] {
		logf("burst: %d tickets from %d lp submitters", c.burst, c.submitters)
		res.Burst[0], err = burstCUPS(ctx, c, q, cupsP, dir)
		if err != nil {
			return res, err
		}
		logf("burst: %d tickets from %d API submitters", c.burst, c.submitters)
		res.Burst[1] = burstPrintgate(ctx, c, a, pgP)
	}

	// 3. A printer killed mid-job, both systems at once.
	if c.phases["kill"] {
		logf("killed mid-job: watching both for %s after the printer returns", c.killWatch)
		res.Kill = killBoth(ctx, c, q, cupsP, a, pgP, dir)
	}

	// 4. Push and forget against printgate under the same chaos.
	if c.phases["chaos"] {
		logf("chaos: %d tickets each at %.0f/s, %.0f%% dropped mid-job, offline spells", c.chaosN, c.chaosRate, c.dropRate*100)
		res.Chaos = chaosBoth(ctx, c, a, naiveProxy, naiveP, pgProxy, chaosP)
	}
	return res, nil
}

// agentProblems picks printgate's WARN and ERROR lines, at most 20.
func agentProblems(logs string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
			if len(out) < 20 {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// writeJob writes tag's job to a file for lp.
func writeJob(dir, tag string, items int) (string, error) {
	f := filepath.Join(dir, tag+".prn")
	if err := os.WriteFile(f, ticketBytes(tag, items), 0o644); err != nil {
		return "", fmt.Errorf("write job %s: %w", tag, err)
	}
	return f, nil
}

// waitWhole waits until every tag is whole on p's paper, or until limit
// passes, or ten seconds pass with no new ticket; it returns how many are.
func waitWhole(ctx context.Context, p *printertest.Printer, tags []string, items int, limit time.Duration) int {
	deadline := time.Now().Add(limit)
	last, lastChange := -1, time.Now()
	for {
		paper := readPaper(p)
		n := 0
		for _, t := range tags {
			if paper[t].Complete(items) {
				n++
			}
		}
		if n == len(tags) || time.Now().After(deadline) || ctx.Err() != nil {
			return n
		}
		if tk := len(p.Tickets()); tk != last {
			last, lastChange = tk, time.Now()
		} else if time.Since(lastChange) > 10*time.Second {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// latencies fills s's printed count, throughput and latency from the paper.
func latencies(s *seqStats, p *printertest.Printer, submitted map[string]time.Time, first time.Time, items int) {
	paper := readPaper(p)
	var ds []time.Duration
	var last time.Time
	for tag, at := range submitted {
		c := paper[tag]
		if !c.Complete(items) || c.EndAt.IsZero() {
			continue
		}
		s.Printed++
		ds = append(ds, c.EndAt.Sub(at))
		if c.EndAt.After(last) {
			last = c.EndAt
		}
	}
	if s.Printed > 0 {
		s.TotalSecs = last.Sub(first).Seconds()
		s.Throughput = float64(s.Printed) / s.TotalSecs
	}
	s.P50ms = ms(percentile(ds, 0.50))
	s.P99ms = ms(percentile(ds, 0.99))
	s.MaxMs = ms(percentile(ds, 1))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func seqCUPS(ctx context.Context, c config, q cupsQueue, p *printertest.Printer, dir string) (seqStats, error) {
	s := seqStats{System: "CUPS", N: c.n}
	files := make([]string, c.n)
	tags := make([]string, c.n)
	for i := range c.n {
		tags[i] = fmt.Sprintf("CS%04d", i)
		f, err := writeJob(dir, tags[i], c.items)
		if err != nil {
			return s, err
		}
		files[i] = f
	}
	submitted := map[string]time.Time{}
	first := time.Now()
	for i, tag := range tags {
		at := time.Now()
		if r := q.submit(ctx, tag, files[i]); r.ok {
			s.Accepted++
			submitted[tag] = at
		}
	}
	s.SubmitSecs = time.Since(first).Seconds()
	s.SubmitRate = float64(c.n) / s.SubmitSecs
	waitWhole(ctx, p, tags, c.items, c.drainTimeout)
	latencies(&s, p, submitted, first, c.items)
	return s, nil
}

func seqPrintgate(ctx context.Context, c config, a *agent, p *printertest.Printer) seqStats {
	s := seqStats{System: "printgate", N: c.n}
	tags := make([]string, c.n)
	jobs := make([][]byte, c.n)
	for i := range c.n {
		tags[i] = fmt.Sprintf("PS%04d", i)
		jobs[i] = ticketBytes(tags[i], c.items)
	}
	submitted := map[string]time.Time{}
	first := time.Now()
	for i, tag := range tags {
		at := time.Now()
		if code, _ := a.submit(ctx, tag, "bench", jobs[i]); code == 202 {
			s.Accepted++
			submitted[tag] = at
		}
	}
	s.SubmitSecs = time.Since(first).Seconds()
	s.SubmitRate = float64(c.n) / s.SubmitSecs
	waitWhole(ctx, p, tags, c.items, c.drainTimeout)
	latencies(&s, p, submitted, first, c.items)
	return s
}

// fanOut runs fn for 0..n-1 from workers goroutines.
func fanOut(n, workers int, fn func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				fn(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

func burstCUPS(ctx context.Context, c config, q cupsQueue, p *printertest.Printer, dir string) (burst, error) {
	b := burst{System: "CUPS", N: c.burst, Submitters: c.submitters, Answers: map[string]int{}}
	files := make([]string, c.burst)
	tags := make([]string, c.burst)
	for i := range c.burst {
		tags[i] = fmt.Sprintf("CB%04d", i)
		f, err := writeJob(dir, tags[i], c.items)
		if err != nil {
			return b, err
		}
		files[i] = f
	}
	var mu sync.Mutex
	var accepted []string
	first := time.Now()
	fanOut(c.burst, c.submitters, func(i int) {
		r := q.submit(ctx, tags[i], files[i])
		mu.Lock()
		defer mu.Unlock()
		if r.ok {
			b.Answers["exit 0"]++
			accepted = append(accepted, tags[i])
			return
		}
		b.Answers[firstLine(r.msg)]++
		if len(b.Refusals) < 3 {
			b.Refusals = append(b.Refusals, r.msg)
		}
	})
	b.SubmitSecs = time.Since(first).Seconds()
	b.Accepted, b.Refused = len(accepted), c.burst-len(accepted)
	waitWhole(ctx, p, accepted, c.items, c.drainTimeout)
	b.Printed, b.Drained = countWhole(p, accepted, c.items, first)
	b.LeftOver = q.notCompleted(ctx)
	if b.LeftOver > 0 {
		q.cancelAll(ctx) // the next phase starts on an empty queue
	}
	return b, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func burstPrintgate(ctx context.Context, c config, a *agent, p *printertest.Printer) burst {
	b := burst{System: "printgate", N: c.burst, Submitters: c.submitters, Answers: map[string]int{}}
	tags := make([]string, c.burst)
	jobs := make([][]byte, c.burst)
	for i := range c.burst {
		tags[i] = fmt.Sprintf("PB%04d", i)
		jobs[i] = ticketBytes(tags[i], c.items)
	}
	var mu sync.Mutex
	var accepted []string
	first := time.Now()
	fanOut(c.burst, c.submitters, func(i int) {
		code, err := a.submit(ctx, tags[i], "bench", jobs[i])
		mu.Lock()
		defer mu.Unlock()
		b.Answers[fmt.Sprintf("HTTP %d", code)]++
		if code == 202 {
			accepted = append(accepted, tags[i])
		} else if len(b.Refusals) < 3 {
			b.Refusals = append(b.Refusals, fmt.Sprintf("HTTP %d %v", code, err))
		}
	})
	b.SubmitSecs = time.Since(first).Seconds()
	b.Accepted, b.Refused = len(accepted), c.burst-len(accepted)
	waitWhole(ctx, p, accepted, c.items, c.drainTimeout)
	b.Printed, b.Drained = countWhole(p, accepted, c.items, first)
	for _, v := range a.states(ctx, accepted) {
		if !terminal(v.State) {
			b.LeftOver++
		}
	}
	return b
}

// countWhole counts tags whole on p's paper and the seconds from first to
// the last of them.
func countWhole(p *printertest.Printer, tags []string, items int, first time.Time) (int, float64) {
	paper := readPaper(p)
	n := 0
	var last time.Time
	for _, t := range tags {
		if c := paper[t]; c.Complete(items) {
			n++
			if c.EndAt.After(last) {
				last = c.EndAt
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return n, last.Sub(first).Seconds()
}

// killBoth kills each system's printer in the middle of one big job, at the
// same time: the printer reads slowly so the job is in flight, drops the
// connection half-way, stays offline for 5 s, then comes back at full
// speed. It records what each system says right then and after killWatch,
// and what is on paper.
func killBoth(ctx context.Context, c config, q cupsQueue, cupsP *printertest.Printer, a *agent, pgP *printertest.Printer, dir string) [2]kill {
	var out [2]kill
	var wg sync.WaitGroup
	type side struct {
		i      int
		name   string
		p      *printertest.Printer
		tag    string
		submit func(tag string) (report func(end bool) (string, string, string))
	}
	job := ticketBytes("CK0001", c.killItems)
	sides := []side{
		{0, "CUPS", cupsP, "CK0001", func(tag string) func(bool) (string, string, string) {
			f, err := writeJob(dir, tag, c.killItems)
			if err != nil {
				return func(bool) (string, string, string) { return err.Error(), "", "" }
			}
			r := q.submit(ctx, tag, f)
			return func(bool) (string, string, string) {
				if !r.ok {
					return "lp refused: " + r.msg, "refused", ""
				}
				return q.jobLong(ctx, r.jobID), q.jobState(ctx, r.jobID), q.printerLong(ctx)
			}
		}},
		{1, "printgate", pgP, "PK0001", func(tag string) func(bool) (string, string, string) {
			code, err := a.submit(ctx, tag, "bench", ticketBytes(tag, c.killItems))
			return func(bool) (string, string, string) {
				if code != 202 {
					return fmt.Sprintf("HTTP %d %v", code, err), "refused", ""
				}
				v, err := a.get(ctx, tag)
				if err != nil {
					return err.Error(), "unknown", a.printers(ctx)
				}
				return taskSummary(v), v.State, a.printers(ctx)
			}
		}},
	}
	for _, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := kill{System: s.name, JobBytes: len(job), CutAfter: len(job) / 2}
			s.p.SetSlow(8000) // the 12 KB job takes about 1.5 s to read
			s.p.FaultAfter(printertest.FaultDrop, k.CutAfter)
			base := s.p.Received()
			report := s.submit(s.tag)
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := s.p.WaitReceived(wctx, base+int64(k.CutAfter))
			cancel()
			s.p.SetFault(printertest.FaultOffline, true)
			if err != nil {
				k.ReportAtBack = "the printer never got half the job: " + err.Error()
			}
			time.Sleep(5 * time.Second)
			s.p.SetSlow(0)
			s.p.SetFault(printertest.FaultOffline, false)
			time.Sleep(2 * time.Second)
			if k.ReportAtBack == "" {
				var state string
				k.ReportAtBack, state, _ = report(false)
				k.ReportAtBack = "state " + state + "\n" + k.ReportAtBack
			}
			time.Sleep(c.killWatch)
			k.ReportEnd, k.StateEnd, k.Printer = report(true)
			paper := readPaper(s.p)
			pc := paper[s.tag]
			if pc != nil {
				k.PlainCopies, k.MarkedCopies = pc.Plain, pc.Marked
				k.WholeCopies = min(pc.Ends, pc.Plain+pc.Marked)
				k.Partial = pc.Seen() && (len(pc.items) < c.killItems || pc.Ends < pc.Plain+pc.Marked)
				k.Paper = fmt.Sprintf("%d headers (%d under POSSIBLE DUPLICATE), %d END lines, %d of %d distinct items", pc.Plain+pc.Marked, pc.Marked, pc.Ends, len(pc.items), c.killItems)
			} else {
				k.Paper = "nothing"
			}
			out[s.i] = k
		}()
	}
	wg.Wait()
	return out
}

func taskSummary(v taskView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s state=%s reason=%q attempts=%d confirmation=%q possible_duplicate=%v", v.TaskNo, v.State, v.Reason, v.Attempts, v.Confirmation, v.PossibleDuplicate)
	for _, t := range v.Timeline {
		fmt.Fprintf(&b, "\n  %s %s %s", t.At.Format("15:04:05.000"), t.State, t.Reason)
	}
	return b.String()
}

// chaosBoth sends the same tickets at the same rate through the naive
// client and through printgate, each to its own emulator behind a chaos
// proxy with the same seed.
func chaosBoth(ctx context.Context, c config, a *agent, naiveProxy *chaosProxy, naiveP *printertest.Printer, pgProxy *chaosProxy, pgP *printertest.Printer) chaos {
	ch := chaos{N: c.chaosN, Rate: c.chaosRate, DropRate: c.dropRate, OfflineRate: c.offlineRate, PrintgateEnds: map[string]int{}}
	naiveTags := make([]string, c.chaosN)
	pgTags := make([]string, c.chaosN)
	for i := range c.chaosN {
		// The same tag on both sides: the proxies drop the same jobs.
		naiveTags[i] = fmt.Sprintf("XC%04d", i)
		pgTags[i] = naiveTags[i]
	}
	naiveOut := make([]naiveOutcome, c.chaosN)
	pgCode := make([]int, c.chaosN)
	stopN := naiveProxy.startChaos(c.offlineRate)
	stopP := pgProxy.startChaos(c.offlineRate)
	every := time.Duration(float64(time.Second) / c.chaosRate)
	var wg sync.WaitGroup
	wg.Add(2)
	start := time.Now()
	go func() {
		defer wg.Done()
		for i, tag := range naiveTags {
			time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
			naiveOut[i] = pushAndForget(naiveProxy.addr, ticketBytes(tag, c.items))
		}
	}()
	go func() {
		defer wg.Done()
		for i, tag := range pgTags {
			time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
			pgCode[i], _ = a.submit(ctx, tag, "chaos", ticketBytes(tag, c.items))
		}
	}()
	wg.Wait()
	// The naive client has nothing more to send; printgate is given time to
	// finish what it accepted, with the faults still on: printgate falls
	// behind the naive client while it recovers, and stopping the faults at
	// the end of the submissions would spare its last tickets.
	var accepted []string
	for i, tag := range pgTags {
		if pgCode[i] == 202 {
			accepted = append(accepted, tag)
		} else {
			ch.Printgate.SubmitRefused++
		}
	}
	drainStart := time.Now()
	deadline := time.Now().Add(c.drainTimeout)
	var states map[string]taskView
	for {
		states = a.states(ctx, accepted)
		done := 0
		for _, v := range states {
			if terminal(v.State) {
				done++
			}
		}
		if done == len(accepted) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	stopN()
	stopP()
	ch.Printgate.DrainSecs = time.Since(drainStart).Seconds()
	time.Sleep(time.Second) // the naive side's last bytes
	for _, v := range states {
		ch.PrintgateEnds[v.State]++
	}

	// Naive side.
	n := &ch.Naive
	n.DroppedTags, n.Spells = naiveProxy.stats()
	n.Drops = len(n.DroppedTags)
	paper := readPaper(naiveP)
	for i, tag := range naiveTags {
		pc := paper[tag]
		believed := naiveOut[i] == naiveSent
		if believed {
			n.Accepted++
		} else {
			n.ClientErrors++
		}
		tally(n, pc, c.items, believed, false)
	}
	// printgate side.
	g := &ch.Printgate
	g.DroppedTags, g.Spells = pgProxy.stats()
	g.Drops = len(g.DroppedTags)
	paper = readPaper(pgP)
	g.Accepted = len(accepted)
	for _, tag := range accepted {
		v, known := states[tag]
		reported := known && v.State != "PRINTED" && (terminal(v.State) || v.State == "HELD" || v.State == "PARKED")
		tally(g, paper[tag], c.items, true, reported)
	}
	return ch
}

// tally adds one ticket's paper to side. believed is whether the sender was
// told it went out; reported whether it was told it did not.
func tally(s *chaosSide, pc *paperCopy, items int, believed, reported bool) {
	whole := pc.Complete(items)
	switch {
	case whole:
		s.Whole++
	case pc.Seen():
		s.PartialOnly++
	default:
		s.Missing++
	}
	if pc != nil {
		s.Marked += pc.Marked
		if pc.Plain > 1 {
			s.Unmarked++
		}
	}
	if believed && !whole {
		if reported {
			s.ReportedFail++
		} else {
			s.SilentlyLost++
		}
	}
}

// printTable writes the results for a person.
func printTable(w io.Writer, r *results) {
	fmt.Fprintf(w, "\nprintgate against CUPS %s — seed %d, %s, ticket %d bytes\n\n", r.CUPS, r.Seed, r.Machine, r.TicketSize)
	fmt.Fprintln(w, "| measure | CUPS | printgate | printgate/CUPS |")
	// Rows of phases not run (-phases) stay at zero.
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	c, p := r.Seq[0], r.Seq[1]
	row := func(name string, a, b float64, unit string) {
		ratio := "—"
		if a > 0 {
			ratio = fmt.Sprintf("%.2f×", b/a)
		}
		fmt.Fprintf(w, "| %s | %.1f %s | %.1f %s | %s |\n", name, a, unit, b, unit, ratio)
	}
	fmt.Fprintf(w, "| sequential: printed whole | %d / %d | %d / %d | |\n", c.Printed, c.N, p.Printed, p.N)
	row("sequential: submits/s", c.SubmitRate, p.SubmitRate, "/s")
	row("sequential: printed/s (first submit → last cut)", c.Throughput, p.Throughput, "/s")
	row("latency submit → cut p50", c.P50ms, p.P50ms, "ms")
	row("latency submit → cut p99", c.P99ms, p.P99ms, "ms")
	b0, b1 := r.Burst[0], r.Burst[1]
	fmt.Fprintf(w, "| burst %d from %d: accepted / refused | %d / %d | %d / %d | |\n", b0.N, b0.Submitters, b0.Accepted, b0.Refused, b1.Accepted, b1.Refused)
	fmt.Fprintf(w, "| burst: answers | %s | %s | |\n", answers(b0.Answers), answers(b1.Answers))
	fmt.Fprintf(w, "| burst: printed whole (of accepted) | %d (%.1f s) | %d (%.1f s) | |\n", b0.Printed, b0.Drained, b1.Printed, b1.Drained)
	row("burst: submit phase", b0.SubmitSecs, b1.SubmitSecs, "s")
	k0, k1 := r.Kill[0], r.Kill[1]
	fmt.Fprintf(w, "| killed mid-job: state at end | %s | %s | |\n", k0.StateEnd, k1.StateEnd)
	fmt.Fprintf(w, "| killed mid-job: paper | %s | %s | |\n", k0.Paper, k1.Paper)
	ch := r.Chaos
	fmt.Fprintf(w, "\nchaos: %d tickets each at %.0f/s, %.0f%% of jobs dropped mid-job, offline chance %.0f%%/s (same seed)\n\n", ch.N, ch.Rate, ch.DropRate*100, ch.OfflineRate*100)
	fmt.Fprintln(w, "| measure | push and forget | printgate |")
	fmt.Fprintln(w, "| --- | --- | --- |")
	n, g := ch.Naive, ch.Printgate
	for _, l := range []struct {
		name string
		a, b int
	}{
		{"jobs cut mid-job by the proxy", n.Drops, g.Drops},
		{"offline spells", n.Spells, g.Spells},
		{"sender told OK (naive: connect+write ok; printgate: 202)", n.Accepted, g.Accepted},
		{"sender saw an error at once", n.ClientErrors, g.SubmitRefused},
		{"printed whole", n.Whole, g.Whole},
		{"partial only (never whole)", n.PartialOnly, g.PartialOnly},
		{"nothing on paper", n.Missing, g.Missing},
		{"told OK but not whole, nobody told (lost)", n.SilentlyLost, g.SilentlyLost},
		{"told OK, not whole, reported FAILED/TIMED_OUT/HELD", n.ReportedFail, g.ReportedFail},
		{"unmarked duplicates", n.Unmarked, g.Unmarked},
		{"copies under POSSIBLE DUPLICATE", n.Marked, g.Marked},
	} {
		fmt.Fprintf(w, "| %s | %d | %d |\n", l.name, l.a, l.b)
	}
	fmt.Fprintf(w, "\nprintgate task states after chaos (drain %.1f s): %s\n", g.DrainSecs, answers(ch.PrintgateEnds))
	for _, k := range r.Kill {
		if k.System == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s, killed mid-job — when the printer came back:\n%s\nat the end:\n%s\nprinter: %s\n", k.System, indent(k.ReportAtBack), indent(k.ReportEnd), indent(k.Printer))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
}

func answers(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
