package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"printgate/agent"
	"printgate/agent/apiclient"
	"printgate/drivers/printertest"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// Options are the flags of one chaos run.
type Options struct {
	// Duration bounds the load and its faults; the drain adds at most
	// Drain after it. Setting up (building the binary) comes before and
	// is bounded on its own by setupLimit.
	Duration time.Duration
	// Tasks is how many tickets the run submits: a quarter as raw jobs to
	// the raw ports, the rest half over the LAN API and half as cloud jobs.
	Tasks int
	// Rate is the arrival rate outside bursts, in tasks per second.
	Rate float64
	// Kills is how many times the agent is SIGKILLed and restarted.
	Kills int
	// Seed draws the whole schedule; the same seed replays the same load
	// and faults (timing on a busy machine still varies).
	Seed uint64
	// Out is where the result (result.json) and the agent's logs go.
	Out string
	// Bin is the printgate binary; empty: built from ./cmd/printgate.
	Bin string
	// Drain bounds the wait, after the load, for every accepted task to
	// end; default 2 minutes.
	Drain time.Duration
	// Log receives progress lines; nil: discarded.
	Log io.Writer
	// Command is how this run was started, recorded in the result.
	Command string
}

// Printers, their models and their backups: 8 printers, two with a backup.
const numPrinters = 8

var backups = map[int]int{0: 1, 2: 3}

// setupLimit bounds building the binary and starting the cast, before the
// run's own clock (Duration + Drain) starts.
const setupLimit = 5 * time.Minute

// lanWorkers is how many POS terminals submit at once over the LAN.
const lanWorkers = 64

// checkReserve is the time kept after the drain for collecting and
// checking, so the run ends by its deadline.
const checkReserve = 30 * time.Second

// runner is one chaos run: the cast, the schedule and what was observed.
type runner struct {
	o     Options
	plan  *plan
	logMu sync.Mutex
	start time.Time // of the load

	dir, dataDir, cfgPath string
	base, token           string
	client                *http.Client
	// api is the agent's local API through client.
	api *apiclient.Client

	cloud      *cloudtest.Cloud
	cloudStop  func()
	cloudURL   string
	agentID    string
	orderWarns atomic.Int64 // "events batch out of order" the cloud logged
	// acksDropped counts the events batches whose events_ack the cloud
	// lost on purpose (ackDropEvery).
	acksDropped atomic.Int64

	printers []*printertest.Printer
	cut      []atomic.Int64 // tickets cut per printer, for the drop arming

	agent    *agentProc
	agentOut *os.File

	rawAddrs map[int]string // printer → its raw port, fixed for the run
	rawMu    sync.Mutex
	raw      map[string]rawJob // tag → what its POS worker saw

	cfgText string  // the config as first written; reloads edit a copy
	reloads reloads // the config reloads and the kept-open client (reload.go)

	mu         sync.Mutex
	lanAnswer  map[string]int      // task_no → the HTTP status that answered it
	unanswered map[string]int      // task_no → task index, to resubmit
	retried    map[string][]string // task_no → where its two Retry clicks led
	probes     map[string]int      // the retries' probe tasks → their printer
	queueErrs  map[string]string   // cloud jobs the cloud would not queue
	outSince   []time.Time         // per printer: when the current spell began (zero: none)
	outs       [][]timeSpan        // per printer: the spells it had, as times
	wanSince   time.Time
	wanDown    time.Duration
	armed      []int // drops armed per printer
	kills      int
	killTimes  []time.Time
	peakCPU    float64
	peakRSSKiB uint64
	sampled    int
}

// timeSpan is a spell in wall-clock time, to compare with the agent's
// timelines.
type timeSpan struct {
	From, To time.Time
	Kind     spellKind
}

func (r *runner) logf(format string, args ...any) {
	if r.o.Log == nil {
		return
	}
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.o.Log, "%s chaos: "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// Run is one chaos run: it sets up the cast, plays the plan, drains and
// checks. It returns the result (with its violations) or an error when
// the run could not be set up; it never runs past Duration + Drain.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Drain <= 0 {
		o.Drain = 2 * time.Minute
	}
	r := &runner{
		o:          o,
		lanAnswer:  map[string]int{},
		unanswered: map[string]int{},
		queueErrs:  map[string]string{},
		raw:        map[string]rawJob{},
		retried:    map[string][]string{},
		probes:     map[string]int{},
		reloads:    reloads{ticket: make(chan func())},
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: lanWorkers + 16, IdleConnTimeout: 30 * time.Second,
		}},
	}
	defer r.client.CloseIdleConnections()
	r.logf("seed %d (replay: go run ./cmd/chaos --seed %d --tasks %d --duration %s)", o.Seed, o.Seed, o.Tasks, o.Duration)
	defer r.teardown()
	// Setting up (building the binary, pairing) is bounded on its own and
	// comes before the run's clock starts.
	sctx, scancel := context.WithTimeout(ctx, setupLimit)
	err := r.setUp(sctx)
	scancel()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	ctx, cancel := context.WithDeadline(ctx, began.Add(o.Duration+o.Drain))
	defer cancel()
	p, err := newPlan(planOptions{Seed: o.Seed, Tasks: o.Tasks, Rate: o.Rate, Printers: numPrinters, Kills: o.Kills, MaxLen: o.Duration, RawPrinters: rawPrinters})
	if err != nil {
		return nil, err
	}
	r.plan = p
	sh := p.spellShares()
	r.logf("plan: %d tasks over %s (%.0f/s mean, bursts of %d/s), %d kills, WAN down %.0f%%, spells offline %.0f%% paper-out %.0f%% flapping %.0f%%, drops %.0f%% of jobs",
		len(p.Tasks), p.Length.Round(time.Second), float64(len(p.Tasks))/p.Length.Seconds(), burstRate, len(p.Kills),
		100*share(p.WANDown, p.Length), 100*sh[spellOffline], 100*sh[spellPaperOut], 100*sh[spellFlap], 100*dropShare)

	smpctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); r.sampleLoop(smpctx) }()
	r.play(ctx)
	res := r.drainAndCheck(ctx)
	stopSampling()
	<-sampled
	res.Elapsed = time.Since(began).Round(time.Second).String()
	return res, nil
}

// setUp starts the reference cloud and the printers, writes the config,
// pairs the agent and starts it.
func (r *runner) setUp(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "printgate-chaos-")
	if err != nil {
		return fmt.Errorf("chaos: make a directory: %w", err)
	}
	r.dir, r.dataDir = dir, filepath.Join(dir, "data")
	if err := os.MkdirAll(r.dataDir, 0o700); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	if r.o.Out != "" {
		if err := os.MkdirAll(r.o.Out, 0o755); err != nil {
			return fmt.Errorf("chaos: --out: %w", err)
		}
	}
	bin := r.o.Bin
	if bin == "" {
		bin = filepath.Join(dir, "printgate")
		r.logf("building printgate")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "printgate/cmd/printgate")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("chaos: go build printgate: %w\n%s", err, out)
		}
	}

	if err := r.startCloud(); err != nil {
		return err
	}
	r.cut = make([]atomic.Int64, numPrinters)
	for i := 0; i < numPrinters; i++ {
		model := printertest.ModelEpson
		if i%2 == 1 {
			model = printertest.ModelClone
		}
		p := printertest.New(printertest.Options{
			Name: fmt.Sprintf("p%d", i), Model: model, PowerOnCJK: model == printertest.ModelClone,
			OnTicket: func(printertest.Ticket) { r.cut[i].Add(1) },
		})
		r.printers = append(r.printers, p)
		if err := p.ListenTCP(); err != nil {
			return fmt.Errorf("chaos: start printer p%d: %w", i, err)
		}
	}
	r.outSince = make([]time.Time, numPrinters)
	r.outs = make([][]timeSpan, numPrinters)
	r.armed = make([]int, numPrinters)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("chaos: pick the agent's port: %w", err)
	}
	listen := ln.Addr().String()
	ln.Close()
	if r.rawAddrs, err = rawPorts(); err != nil {
		return err
	}
	r.base = "http://" + listen
	r.token = "chaos-" + randomToken()
	r.api = apiclient.New(r.base, r.token, r.client)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "data_dir = %q\nlisten = %q\napi_token = %q\n\n[cloud]\nurl = \"ws://%s%s\"\nauth_url = \"http://%s/oauth\"\n\n[log]\nlevel = \"info\"\n",
		r.dataDir, listen, r.token, r.cloudURL, cloudtest.AgentPath, r.cloudURL)
	for i, p := range r.printers {
		profile := "epson-80"
		if p.Model() == printertest.ModelClone {
			profile = "xprinter-80"
		}
		fmt.Fprintf(&cfg, "\n[[printers]]\nname = %q\nurl = \"tcp://%s\"\nprofile = %q\n", p.Name(), p.Addr(), profile)
		if b, ok := backups[i]; ok {
			fmt.Fprintf(&cfg, "backup = \"p%d\"\n", b)
		}
		if a, ok := r.rawAddrs[i]; ok {
			fmt.Fprintf(&cfg, "raw_listen = %q\n", a)
		}
	}
	r.cfgPath = filepath.Join(dir, "printgate.toml")
	r.cfgText = cfg.String()
	if err := os.WriteFile(r.cfgPath, []byte(cfg.String()), 0o600); err != nil {
		return fmt.Errorf("chaos: write the config: %w", err)
	}
	if r.agentID, err = agent.LoadOrCreateAgentID(r.dataDir); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	if err := r.pair(ctx); err != nil {
		return err
	}
	if err := r.setPIN(ctx, bin); err != nil {
		return err
	}

	outPath := filepath.Join(dir, "agent-stdout.log")
	if r.agentOut, err = os.Create(outPath); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	r.agent = &agentProc{bin: bin, config: r.cfgPath, base: r.base, out: r.agentOut, client: r.client}
	if err := r.agent.start(ctx); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.cloud.WaitConnected(wctx, r.agentID, true); err != nil {
		return fmt.Errorf("chaos: the agent did not connect to the cloud: %w", err)
	}
	r.logf("cast up: agent %s (pid %d) at %s, cloud at %s, %d printers (p0→p1 and p2→p3 fail over), raw ports %v", r.agentID, r.agent.pid(), r.base, r.cloudURL, numPrinters, r.rawAddrs)
	return nil
}

// ackDropEvery is how often the cloud loses an events_ack: one batch in
// this many (the tenth, then every ackDropEvery-th), so the run walks the
// link's ack timeout and resend and still has every event
// in the cloud and the outbox empty at the end.
const ackDropEvery = 100

// startCloud serves the reference cloud on a free loopback port, with
// room for every job and event of the run, losing one events_ack in
// ackDropEvery.
func (r *runner) startCloud() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("chaos: start the cloud: %w", err)
	}
	r.cloud = cloudtest.New(cloudtest.Options{
		PollInterval:  time.Second,
		MaxQueuedJobs: r.o.Tasks + 1000,
		MaxEvents:     20*r.o.Tasks + 10_000,
		MaxRecords:    4*r.o.Tasks + 10_000,
		Logger:        slog.New(&warnCounter{n: &r.orderWarns}),
		DropEventsAck: r.dropAck(),
	})
	srv := &http.Server{Handler: r.cloud.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ln) }()
	r.cloudURL = ln.Addr().String()
	r.cloudStop = func() {
		r.cloud.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		<-served
	}
	return nil
}

// dropAck is the cloud's DropEventsAck: true for one batch in
// ackDropEvery. The cloud calls it under its lock, one batch at a time.
func (r *runner) dropAck() func(agentID, batch string) bool {
	batches := 0
	return func(string, string) bool {
		batches++
		if batches%ackDropEvery != 10%ackDropEvery {
			return false
		}
		r.acksDropped.Add(1)
		return true
	}
}

// pair runs the device flow against the cloud and approves it, as demo.go
// does, and saves the device token where the agent reads it.
func (r *runner) pair(ctx context.Context) error {
	p, err := pair.Start(ctx, "http://"+r.cloudURL+"/oauth", r.client)
	if err != nil {
		return fmt.Errorf("chaos: pairing: %w", err)
	}
	if err := r.cloud.Approve(p.UserCode); err != nil {
		return fmt.Errorf("chaos: approve the pairing: %w", err)
	}
	tok, err := p.Wait(ctx)
	if err != nil {
		return fmt.Errorf("chaos: pairing: %w", err)
	}
	if err := pair.Save(r.dataDir, tok); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

// warnCounter is the cloud's log handler: it counts the batches the cloud
// saw out of task_no order (it logs and stores them anyway).
type warnCounter struct{ n *atomic.Int64 }

func (w *warnCounter) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnCounter) Handle(_ context.Context, rec slog.Record) error {
	if strings.Contains(rec.Message, "out of order") {
		w.n.Add(1)
	}
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

// play runs the load, the faults, the kills and the sampler until the
// plan's load is over (or ctx ends).
func (r *runner) play(ctx context.Context) {
	r.start = time.Now()
	loadEnd := r.start.Add(r.plan.Length)
	pctx, stop := context.WithDeadline(ctx, loadEnd.Add(time.Second))
	defer stop()
	var wg sync.WaitGroup
	lan := make(chan int, len(r.plan.Tasks))
	raw := make(chan int, len(r.plan.Tasks))
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	run(func() { r.dispatch(pctx, lan, raw) })
	for w := 0; w < rawWorkers; w++ {
		rng := rand.New(rand.NewPCG(r.plan.Seed, uint64(1000+w)))
		blindRng := rand.New(rand.NewPCG(r.plan.Seed, uint64(2000+w)))
		run(func() {
			r.rawWorker(pctx, raw, func() bool { return rng.Float64() < rawAbortShare }, func() bool { return blindRng.Float64() < rawBlindShare })
		})
	}
	for w := 0; w < lanWorkers; w++ {
		run(func() {
			for i := range lan {
				r.submitLAN(pctx, i)
			}
		})
	}
	run(func() { r.resubmitLoop(pctx) })
	run(func() { r.retryLoop(pctx) })
	run(func() { r.faults(pctx) })
	run(func() { r.killLoop(pctx, ctx) })
	run(func() { r.keptOpenLoop(pctx) })
	run(func() { r.reloadLoop(pctx) })
	for i := range r.printers {
		run(func() { r.dropLoop(pctx, i) })
	}
	<-pctx.Done()
	wg.Wait()
	r.mu.Lock()
	left := len(r.unanswered)
	r.mu.Unlock()
	r.logf("load over after %s: %d kills, %d LAN submissions still unanswered", time.Since(r.start).Round(time.Second), r.kills, left)
}

// sleepUntil waits for t or ctx; it reports false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// dispatch releases each task at its time: a cloud job is queued in the
// cloud, a LAN task handed to the POS workers, a raw job to the raw POS
// workers. It closes lan and raw when done.
func (r *runner) dispatch(ctx context.Context, lan, raw chan<- int) {
	defer close(lan)
	defer close(raw)
	for i, t := range r.plan.Tasks {
		if !sleepUntil(ctx, r.start.Add(t.At)) {
			return
		}
		if t.Raw {
			raw <- i
			continue
		}
		if !t.Cloud {
			lan <- i
			continue
		}
		job := wire.Job{TaskNo: t.No, Printer: fmt.Sprintf("p%d", t.Printer), Document: ticketDoc(t.No)}
		if err := r.cloud.Queue(r.agentID, job); err != nil {
			r.mu.Lock()
			r.queueErrs[t.No] = err.Error()
			r.mu.Unlock()
		}
	}
}

// ticketDoc is a task's document: one line Copies can count.
func ticketDoc(taskNo string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}`, taskNo))
}

// submitLAN posts task i as a POS does and files the answer: 202 or 200
// is accepted, no answer (or 503) is resubmitted later, anything else is
// a refusal the check reports. Once ctx has ended it only files the task
// as unanswered.
func (r *runner) submitLAN(ctx context.Context, i int) {
	t := r.plan.Tasks[i]
	if ctx.Err() != nil {
		// Out of time: the POS still owes it, and the report says so.
		r.mu.Lock()
		r.unanswered[t.No] = i
		r.mu.Unlock()
		return
	}
	// The status alone is filed: 0 when no answer came.
	code, _ := r.api.Submit(ctx, map[string]any{"task_no": t.No, "printer": fmt.Sprintf("p%d", t.Printer), "document": ticketDoc(t.No)}, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch code {
	case http.StatusAccepted, http.StatusOK:
		r.lanAnswer[t.No] = code
		delete(r.unanswered, t.No)
	case 0, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		r.unanswered[t.No] = i
	default:
		r.lanAnswer[t.No] = code
		delete(r.unanswered, t.No)
	}
}

// resubmitLoop resubmits, every second, what got no answer: same task_no,
// as a POS does after its request failed.
func (r *runner) resubmitLoop(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.resubmitOnce(ctx)
	}
}

func (r *runner) resubmitOnce(ctx context.Context) {
	r.mu.Lock()
	var list []int
	for _, i := range r.unanswered {
		list = append(list, i)
	}
	r.mu.Unlock()
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r.submitLAN(ctx, i)
			}
		}()
	}
	for _, i := range list {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
}

// faults plays the printer spells and the WAN windows, recording when
// each really began and ended.
func (r *runner) faults(ctx context.Context) {
	defer r.allClear()
	for _, e := range r.plan.events() {
		if !sleepUntil(ctx, r.start.Add(e.At)) {
			return
		}
		r.apply(e)
	}
}

// apply makes one switch of the plan.
func (r *runner) apply(e faultEvent) {
	now := time.Now()
	if e.Printer < 0 {
		r.cloud.SetRefusing(e.On)
		if e.On {
			r.cloud.DropAll()
		}
		r.mu.Lock()
		if e.On {
			r.wanSince = now
		} else if !r.wanSince.IsZero() {
			r.wanDown += now.Sub(r.wanSince)
			r.wanSince = time.Time{}
		}
		r.mu.Unlock()
		return
	}
	kind := printertest.FaultOffline
	if e.Kind == spellPaperOut {
		kind = printertest.FaultPaperOut
	}
	if err := r.printers[e.Printer].SetFault(kind, e.On); err != nil {
		r.logf("p%d: %s %v: %v", e.Printer, kind, e.On, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A flapping spell is one out span from its first toggle to its last.
	sp := r.spellAt(e)
	switch {
	case sp == nil:
	case e.At == sp.Start && r.outSince[e.Printer].IsZero():
		r.outSince[e.Printer] = now
	case e.At == sp.End && !r.outSince[e.Printer].IsZero():
		r.outs[e.Printer] = append(r.outs[e.Printer], timeSpan{From: r.outSince[e.Printer], To: now, Kind: sp.Kind})
		r.outSince[e.Printer] = time.Time{}
	}
}

// spellAt finds the plan's spell an event belongs to.
func (r *runner) spellAt(e faultEvent) *spell {
	list := r.plan.Spells[e.Printer]
	for k := range list {
		if list[k].Start <= e.At && e.At <= list[k].End {
			return &list[k]
		}
	}
	return nil
}

// allClear ends every fault: printers online with paper, the WAN up, and
// closes the spans still open.
func (r *runner) allClear() {
	for _, p := range r.printers {
		p.SetFault(printertest.FaultOffline, false)
		p.SetFault(printertest.FaultPaperOut, false)
	}
	r.cloud.SetRefusing(false)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.printers {
		if !r.outSince[i].IsZero() {
			r.outs[i] = append(r.outs[i], timeSpan{From: r.outSince[i], To: now, Kind: "(open at the end)"})
			r.outSince[i] = time.Time{}
		}
	}
	if !r.wanSince.IsZero() {
		r.wanDown += now.Sub(r.wanSince)
		r.wanSince = time.Time{}
	}
}

// dropLoop drops printer i's connection mid-job for dropShare of its jobs:
// after each ticket it cuts, with that chance, a drop is armed at a random
// byte of what comes next (one armed at a time, so every arming is one
// drop that happened or is still pending).
func (r *runner) dropLoop(ctx context.Context, i int) {
	p := r.printers[i]
	rng := rand.New(rand.NewPCG(r.plan.DropSeed[i], uint64(i)))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var seen int64
	want := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for n := r.cut[i].Load(); seen < n; seen++ {
			if rng.Float64() < dropShare {
				want++
			}
		}
		if want > 0 && p.Armed() == 0 {
			// A ticket here is ~60 bytes and its job ~100 with the
			// status queries around it: anywhere inside it.
			if p.FaultAfter(printertest.FaultDrop, 1+rng.IntN(100)) == nil {
				want--
				r.mu.Lock()
				r.armed[i]++
				r.mu.Unlock()
			}
		}
	}
}

// killLoop SIGKILLs the agent at the plan's times until ctx ends, and
// restarts it at once (within run, which outlives the load).
func (r *runner) killLoop(ctx, run context.Context) {
	kills := r.plan.Kills
	for {
		var next <-chan time.Time
		var tm *time.Timer
		if len(kills) > 0 {
			tm = time.NewTimer(time.Until(r.start.Add(kills[0])))
			next = tm.C
		}
		select {
		case <-ctx.Done():
			if tm != nil {
				tm.Stop()
			}
			return
		case <-next:
			kills = kills[1:]
			r.agent.kill()
			r.mu.Lock()
			r.kills++
			r.killTimes = append(r.killTimes, time.Now())
			n := r.kills
			r.mu.Unlock()
			at := time.Now()
			if err := r.agent.start(run); err != nil {
				r.logf("kill %d: restart failed: %v", n, err)
			} else {
				r.logf("kill %d: agent SIGKILLed and back in %s (pid %d)", n, time.Since(at).Round(time.Millisecond), r.agent.pid())
			}
		}
		if tm != nil {
			tm.Stop()
		}
	}
}

// sampleLoop samples the agent's CPU and RSS every second until ctx ends.
func (r *runner) sampleLoop(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last procSample
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		last = r.sample(last)
	}
}

// sample reads the agent's CPU and RSS and keeps the peaks.
func (r *runner) sample(last procSample) procSample {
	pid := r.agent.pid()
	if pid == 0 {
		return last
	}
	s, err := readProc(pid)
	if err != nil {
		return last
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := cpuPercent(last, s); ok && c > r.peakCPU {
		r.peakCPU = c
	}
	r.peakRSSKiB = max(r.peakRSSKiB, s.rssKiB)
	r.sampled++
	return s
}

// teardown stops everything the run started and keeps the agent's logs.
func (r *runner) teardown() {
	if r.agent != nil {
		r.agent.kill()
	}
	if r.agentOut != nil {
		r.agentOut.Close()
	}
	if r.cloudStop != nil {
		r.cloudStop()
	}
	for _, p := range r.printers {
		p.Close()
	}
	if r.dir == "" {
		return
	}
	if r.o.Out != "" {
		// The agent's own log (rotated files too) and what it wrote to
		// stdout: what a failing run is diagnosed from.
		logs, _ := filepath.Glob(filepath.Join(r.dataDir, "printgate*.log*"))
		// Not the config: it holds the API token.
		logs = append(logs, filepath.Join(r.dir, "agent-stdout.log"))
		for _, f := range logs {
			if err := copyFile(f, filepath.Join(r.o.Out, filepath.Base(f))); err != nil {
				r.logf("keep %s: %v", f, err)
			}
		}
	}
	os.RemoveAll(r.dir)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return out.Close()
}

// randomToken is a fresh API token for the run.
func randomToken() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 32)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}
