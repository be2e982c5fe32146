package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"printgate/agent"
	"printgate/agent/apiclient"
	"printgate/drivers/printertest"
)

// Options shape one soak run.
type Options struct {
	Duration  time.Duration
	Rate      float64
	Sample    time.Duration
	Out       string
	Bin       string
	Seed      uint64
	Retention time.Duration
	Keep      bool
}

// errSetup marks failures before the load started (build, ports, agent
// start), which exit 2 rather than 1.
var errSetup = errors.New("setup")

// drainTimeout bounds the wait, after the load stops, for the tasks still
// queued to print.
const drainTimeout = 3 * time.Minute

// soakToken is the API token of the soak's agent (loopback only).
const soakToken = "soak-token-0123456789abcdef"

// printerCount is how many emulated printers the agent drives.
const printerCount = 4

// Report is the outcome of a run.
type Report struct {
	Seed     uint64
	Ran      time.Duration
	Accepted int
	Printed  int
	Refused  map[string]int
	// Missing lists accepted tasks not on paper after the drain, with the
	// state the agent reports for each.
	Missing       []string
	UnmarkedDups  int
	MarkedDups    int
	Faults        map[printertest.FaultKind]int
	Verdicts      []Verdict
	CSVPath       string
	SVGPath       string
	AgentDataDir  string
	AgentExitNote string
	// FromCSV marks a report rebuilt by Rejudge: the tasks are the last
	// sample's counts and were not checked against the printers.
	FromCSV bool
}

// Pass reports whether the run met the promise: every series levelled off,
// every accepted task printed, none twice without the banner.
func (r *Report) Pass() bool {
	for _, v := range r.Verdicts {
		if !v.Pass {
			return false
		}
	}
	return len(r.Missing) == 0 && r.UnmarkedDups == 0
}

// paper records what the emulated printers cut: copies of each task, plain
// and under the POSSIBLE DUPLICATE banner.
type paper struct {
	mu     sync.Mutex
	plain  map[string]int
	marked map[string]int
}

func (p *paper) onTicket(t printertest.Ticket) {
	p.mu.Lock()
	defer p.mu.Unlock()
	flag := false
	for _, line := range t.Lines {
		if strings.Contains(line, "POSSIBLE DUPLICATE") {
			flag = true
		}
		if f := strings.Fields(line); len(f) == 2 && f[0] == "SOAK" {
			if flag {
				p.marked[f[1]]++
			} else {
				p.plain[f[1]]++
			}
			flag = false
		}
	}
}

// count returns how many distinct tasks are on paper.
func (p *paper) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.plain)
	for no := range p.marked {
		if p.plain[no] == 0 {
			n++
		}
	}
	return n
}

func (p *paper) has(no string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.plain[no]+p.marked[no] > 0
}

// Soak runs one soak with o, printing progress and the report to out.
func Soak(ctx context.Context, o Options, out io.Writer) (*Report, error) {
	if o.Rate <= 0 || o.Sample <= 0 || o.Duration <= 0 {
		return nil, fmt.Errorf("%w: --rate, --sample and --duration must be positive", errSetup)
	}
	// Probes (healthz, metrics, task states) use the default transport:
	// close its idle connections on the way out so no goroutine outlives
	// the run.
	defer http.DefaultClient.CloseIdleConnections()
	rep := &Report{Seed: o.Seed, Refused: map[string]int{}, Faults: map[printertest.FaultKind]int{}}
	fmt.Fprintf(out, "soak: seed %d (replay the fault schedule with --seed %d), %s at %g tasks/s, sample every %s, retention %s\n",
		o.Seed, o.Seed, o.Duration, o.Rate, o.Sample, o.Retention)
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("%w: output directory: %w", errSetup, err)
	}
	dir, err := os.MkdirTemp("", "printgate-soak-")
	if err != nil {
		return nil, fmt.Errorf("%w: data directory: %w", errSetup, err)
	}
	rep.AgentDataDir = dir
	if o.Keep {
		fmt.Fprintf(out, "soak: agent data directory %s (kept)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	bin := o.Bin
	if bin == "" {
		bin = filepath.Join(dir, "printgate")
		fmt.Fprintln(out, "soak: building printgate")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "printgate/cmd/printgate")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%w: go build printgate: %w\n%s", errSetup, err, b)
		}
	}

	onPaper := &paper{plain: map[string]int{}, marked: map[string]int{}}
	var printers []*printertest.Printer
	defer func() {
		for _, p := range printers {
			p.Close()
		}
	}()
	models := []printertest.Model{printertest.ModelEpson, printertest.ModelClone, printertest.ModelEpson, printertest.ModelClone}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSetup, err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n[spool]\nretention = %q\n[log]\nlevel = \"info\"\n",
		dir, port, soakToken, o.Retention.String())
	for i := range printerCount {
		p := printertest.New(printertest.Options{Name: fmt.Sprintf("p%d", i), Model: models[i], OnTicket: onPaper.onTicket})
		if err := p.ListenTCP(); err != nil {
			return nil, fmt.Errorf("%w: emulated printer: %w", errSetup, err)
		}
		printers = append(printers, p)
		fmt.Fprintf(&cfg, "[[printers]]\nname = %q\nurl = \"tcp://%s\"\n", p.Name(), p.Addr())
	}
	config := filepath.Join(dir, "printgate.toml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		return nil, fmt.Errorf("%w: write config: %w", errSetup, err)
	}
	agent, err := startAgent(bin, config, dir, base)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSetup, err)
	}
	defer agent.stop(rep)
	started := time.Now()

	csvPath := filepath.Join(o.Out, "soak.csv")
	rep.CSVPath = csvPath
	rec, err := newRecorder(csvPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSetup, err)
	}
	defer rec.close()

	// Light faults, one schedule per printer, seeded: a fault starts in
	// about one 10 s step in 25 and lasts 10–40 s (paper out, offline) or
	// is a one-shot connection drop.
	var faultMu sync.Mutex
	var stops []func()
	for i, p := range printers {
		stops = append(stops, p.StartChaos(printertest.ChaosOptions{
			Seed:  o.Seed + uint64(i),
			Every: 10 * time.Second,
			Kinds: []printertest.FaultKind{printertest.FaultPaperOut, printertest.FaultOffline, printertest.FaultDrop},
			Rate:  0.04,
		}, func(k printertest.FaultKind, on bool) {
			if on {
				faultMu.Lock()
				rep.Faults[k]++
				faultMu.Unlock()
			}
		}))
	}
	stopChaos := func() {
		for _, s := range stops {
			s()
		}
		stops = nil
	}
	defer stopChaos()

	load := newLoad(base, o.Rate)
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() { defer close(loadDone); load.run(loadCtx) }()
	defer func() { stopLoad(); <-loadDone }()

	sample := func() {
		s := takeSample(agent.pid(), base, dir)
		s.Elapsed = time.Since(started).Seconds()
		s.Accepted, _ = load.counts()
		s.Printed = onPaper.count()
		rec.add(s)
		fmt.Fprintf(out, "soak: %6.0fs  rss %6.1f MiB (anon %6.1f)  goroutines %4.0f  fds %4.0f  spool %7.1f MiB  accepted %d printed %d\n",
			s.Elapsed, s.RSS/(1<<20), s.RSSAnon/(1<<20), s.Goroutines, s.FDs, s.Spool/(1<<20), s.Accepted, s.Printed)
	}
	sample()
	tick := time.NewTicker(o.Sample)
	end := time.NewTimer(o.Duration)
loop:
	for {
		select {
		case <-tick.C:
			sample()
		case <-end.C:
			break loop
		case <-ctx.Done():
			fmt.Fprintln(out, "soak: interrupted; judging what was recorded")
			break loop
		case <-agent.exited:
			tick.Stop()
			return rep, fmt.Errorf("agent exited during the run (log in %s)", dir)
		}
	}
	tick.Stop()
	end.Stop()
	sample()
	rep.Ran = time.Since(started)
	stopLoad()
	<-loadDone
	stopChaos()

	// Every accepted task must reach paper once the faults stop.
	accepted := load.acceptedNos()
	rep.Accepted = len(accepted)
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), drainTimeout)
	for drainCtx.Err() == nil && onPaper.count() < len(accepted) {
		select {
		case <-drainCtx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	cancelDrain()
	rep.Printed = onPaper.count()
	for _, no := range accepted {
		if !onPaper.has(no) {
			rep.Missing = append(rep.Missing, no+" ("+taskState(base, no)+")")
		}
	}
	onPaper.mu.Lock()
	for _, n := range onPaper.plain {
		if n > 1 {
			rep.UnmarkedDups++
		}
	}
	for _, n := range onPaper.marked {
		rep.MarkedDups += n
	}
	onPaper.mu.Unlock()
	_, rep.Refused = load.counts()
	agent.stop(rep)

	rep.Verdicts = judge(rec.rows, o)
	svgPath := filepath.Join(o.Out, "soak.svg")
	rep.SVGPath = svgPath
	if err := writePlot(svgPath, rec.rows, rep, o); err != nil {
		return rep, err
	}
	if err := rec.close(); err != nil {
		return rep, err
	}
	printReport(out, rep)
	return rep, nil
}

// judge applies the verdict rules to the recorded rows.
func judge(rows []sampleRow, o Options) []Verdict {
	ss := seriesOf(rows)
	// Limits: 10% of the mean per hour, and a floor of absolute growth
	// across the judged half that noise of a healthy agent stays under.
	return []Verdict{
		JudgeLevel(ss.rssAnon, LevelRule{RelPerHour: 0.10, AbsFloor: 4 << 20}),
		JudgeLevel(ss.goroutines, LevelRule{RelPerHour: 0.10, AbsFloor: 10}),
		JudgeLevel(ss.fds, LevelRule{RelPerHour: 0.10, AbsFloor: 8}),
		JudgeSpool(ss.spool, ss.accepted, SpoolRule{Retention: o.Retention, PruneEvery: agent.PruneEvery(o.Retention), Margin: 0.25, Step: 16 << 20}),
	}
}

type allSeries struct {
	rss, rssAnon, heap, goroutines, fds, spool, accepted, printed Series
}

func seriesOf(rows []sampleRow) allSeries {
	a := allSeries{
		rss:        Series{Name: "RSS (VmRSS)", Unit: "B"},
		rssAnon:    Series{Name: "RSS anonymous (RssAnon)", Unit: "B"},
		heap:       Series{Name: "Go heap in use", Unit: "B"},
		goroutines: Series{Name: "goroutines"},
		fds:        Series{Name: "open fds"},
		spool:      Series{Name: "spool.db size", Unit: "B"},
		accepted:   Series{Name: "accepted"},
		printed:    Series{Name: "printed"},
	}
	for _, r := range rows {
		for _, p := range []struct {
			s *Series
			v float64
		}{{&a.rss, r.RSS}, {&a.rssAnon, r.RSSAnon}, {&a.heap, r.Heap}, {&a.goroutines, r.Goroutines}, {&a.fds, r.FDs}, {&a.spool, r.Spool},
			{&a.accepted, float64(r.Accepted)}, {&a.printed, float64(r.Printed)}} {
			p.s.T = append(p.s.T, r.Elapsed)
			p.s.V = append(p.s.V, p.v)
		}
	}
	return a
}

func writePlot(path string, rows []sampleRow, rep *Report, o Options) error {
	ss := seriesOf(rows)
	verdict := func(i int) string {
		if i >= len(rep.Verdicts) {
			return ""
		}
		v := rep.Verdicts[i]
		switch {
		case !v.Judged:
			return "not judged (run too short)"
		case v.Pass:
			return "PASS"
		}
		return "FAIL: keeps growing"
	}
	ss.rssAnon.Name = "RssAnon"
	ss.rss.Name = "VmRSS"
	ss.heap.Name = "Go heap in use"
	tasks := fmt.Sprintf("%d accepted, %d printed, %d missing", rep.Accepted, rep.Printed, len(rep.Missing))
	if rep.FromCSV {
		tasks = fmt.Sprintf("at the last sample: %d accepted, %d printed", rep.Accepted, rep.Printed)
	}
	panels := []Panel{
		{Title: "agent RSS", Series: []Series{ss.rss, ss.rssAnon, ss.heap}, Verdict: "RssAnon " + verdict(0)},
		{Title: "goroutines", Series: []Series{ss.goroutines}, Verdict: verdict(1)},
		{Title: "open file descriptors", Series: []Series{ss.fds}, Verdict: verdict(2)},
		{Title: fmt.Sprintf("spool.db size (retention %s)", o.Retention), Series: []Series{ss.spool}, Verdict: verdict(3)},
		{Title: "tasks", Series: []Series{ss.accepted, ss.printed}, Verdict: tasks},
	}
	title := fmt.Sprintf("printgate soak: %s at %g tasks/s, 4 emulated printers, light faults (seed %d)", rep.Ran.Round(time.Second), o.Rate, rep.Seed)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create plot: %w", err)
	}
	if err := WriteSVG(f, title, panels); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close plot: %w", err)
	}
	return nil
}

func printReport(out io.Writer, rep *Report) {
	fmt.Fprintf(out, "\nsoak: ran %s, seed %d; %.2f tasks/s accepted on average\n", rep.Ran.Round(time.Second), rep.Seed, float64(rep.Accepted)/max(rep.Ran.Seconds(), 1))
	if rep.FromCSV {
		fmt.Fprintf(out, "  tasks at the last sample (judged from the CSV: not checked against the printers): %d accepted, %d printed\n", rep.Accepted, rep.Printed)
	} else {
		fmt.Fprintf(out, "  tasks: %d accepted, %d printed, %d missing, %d unmarked duplicates, %d marked copies; refused: %v\n",
			rep.Accepted, rep.Printed, len(rep.Missing), rep.UnmarkedDups, rep.MarkedDups, rep.Refused)
		fmt.Fprintf(out, "  faults started: %v\n", rep.Faults)
	}
	for i, no := range rep.Missing {
		if i == 10 {
			fmt.Fprintf(out, "  ... and %d more missing\n", len(rep.Missing)-10)
			break
		}
		fmt.Fprintf(out, "  missing: %s\n", no)
	}
	for _, v := range rep.Verdicts {
		mark := "PASS"
		if !v.Pass {
			mark = "FAIL"
		} else if !v.Judged {
			mark = "----"
		}
		fmt.Fprintf(out, "  %s %-24s %s\n", mark, v.Name, v.Detail)
	}
	if rep.AgentExitNote != "" {
		fmt.Fprintf(out, "  agent: %s\n", rep.AgentExitNote)
	}
	fmt.Fprintf(out, "  wrote %s and %s\n", rep.CSVPath, rep.SVGPath)
	if rep.Pass() {
		fmt.Fprintln(out, "soak: PASS")
	} else {
		fmt.Fprintln(out, "soak: FAIL")
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// agentProc is the running printgate binary.
type agentProc struct {
	cmd    *exec.Cmd
	logf   *os.File
	exited chan struct{}
	err    error
}

func startAgent(bin, config, dir, base string) (*agentProc, error) {
	logf, err := os.Create(filepath.Join(dir, "agent.out"))
	if err != nil {
		return nil, fmt.Errorf("agent output file: %w", err)
	}
	cmd := exec.Command(bin, "run", "--config", config)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start agent: %w", err)
	}
	a := &agentProc{cmd: cmd, logf: logf, exited: make(chan struct{})}
	go func() { a.err = cmd.Wait(); close(a.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		select {
		case <-a.exited:
			logf.Close()
			return nil, fmt.Errorf("agent exited at start: %v (output in %s)", a.err, logf.Name())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-a.exited
			logf.Close()
			return nil, fmt.Errorf("agent did not answer /healthz within 30s (output in %s)", logf.Name())
		}
	}
}

func (a *agentProc) pid() int { return a.cmd.Process.Pid }

// stop ends the agent with SIGTERM (a clean stop), killing it after 30 s.
func (a *agentProc) stop(rep *Report) {
	select {
	case <-a.exited:
	default:
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.exited:
		case <-time.After(30 * time.Second):
			_ = a.cmd.Process.Kill()
			<-a.exited
			rep.AgentExitNote = "did not stop within 30 s of SIGTERM; killed"
		}
	}
	if a.err != nil && rep.AgentExitNote == "" {
		rep.AgentExitNote = fmt.Sprintf("exit: %v", a.err)
	}
	a.logf.Close()
}

// load submits tasks at a fixed rate through the API.
type load struct {
	base     string
	interval time.Duration
	client   *http.Client
	api      *apiclient.Client // the agent's API through client

	mu       sync.Mutex
	accepted []string
	refused  map[string]int
}

func newLoad(base string, rate float64) *load {
	l := &load{
		base:     base,
		interval: time.Duration(float64(time.Second) / rate),
		// No keep-alive: an idle pooled connection is a goroutine and an fd
		// in the agent, and a pool that fills over the run (up to one per
		// concurrent request) reads as a leak in the goroutine and fd
		// verdicts, as it did in the 20-minute run.
		client:  &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		refused: map[string]int{},
	}
	l.api = apiclient.New(base, soakToken, l.client)
	return l
}

// run submits one task per interval until ctx ends; up to 16 requests are
// in flight, so one slow answer does not stall the pace.
func (l *load) run(ctx context.Context) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				l.submit(i)
			}
		}()
	}
	t := time.NewTicker(l.interval)
	defer func() {
		t.Stop()
		close(work)
		wg.Wait()
		l.client.CloseIdleConnections()
	}()
	// Task i is due at start + i·interval: a tick that came late (a busy
	// machine, all workers waiting on answers) is made up at the next one,
	// so the run keeps the asked rate on average.
	start := time.Now()
	next := 1
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		due := int(time.Since(start) / l.interval)
		for ; next <= due; next++ {
			select {
			case work <- next:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (l *load) submit(i int) {
	no := fmt.Sprintf("S%07d_v1", i)
	body := fmt.Sprintf(`{"task_no":%q,"printer":"p%d","document":{"lines":[{"text":"SOAK %s"},{"text":"1 x coffee        2.50"},{"text":"1 x croissant     1.90"},{"cut":"partial"}]}}`, no, i%printerCount, no)
	code, err := l.api.Submit(context.Background(), json.RawMessage(body), nil)
	switch {
	case code == 0 && err != nil && !errors.Is(err, apiclient.ErrAgentDown):
		l.refuse("request: " + err.Error())
		return
	case code == 0:
		l.refuse("no answer")
		return
	case code != http.StatusAccepted:
		l.refuse("HTTP " + strconv.Itoa(code))
		return
	}
	l.mu.Lock()
	l.accepted = append(l.accepted, no)
	l.mu.Unlock()
}

func (l *load) refuse(why string) {
	l.mu.Lock()
	l.refused[why]++
	l.mu.Unlock()
}

func (l *load) counts() (int, map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := make(map[string]int, len(l.refused))
	for k, v := range l.refused {
		r[k] = v
	}
	return len(l.accepted), r
}

func (l *load) acceptedNos() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.accepted...)
}

// taskState asks the agent what became of a task, for the report.
func taskState(base, no string) string {
	c := apiclient.New(base, soakToken, &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}})
	var v struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	}
	code, err := c.Do(context.Background(), http.MethodGet, "/api/v1/tasks/"+no, nil, &v)
	switch {
	case errors.Is(err, apiclient.ErrAgentDown):
		return "agent unreachable"
	case err != nil:
		return "HTTP " + strconv.Itoa(code)
	}
	return strings.TrimSpace(v.State + " " + v.Reason)
}

// sampleRow is one line of the CSV.
type sampleRow struct {
	Elapsed    float64
	RSS        float64
	RSSAnon    float64
	RSSFile    float64
	Goroutines float64
	FDs        float64
	Spool      float64
	Accepted   int
	Printed    int
	// Heap is go_memstats_heap_inuse_bytes from /metrics: what the Go
	// heap really holds, to tell a leak from the runtime keeping pages.
	Heap float64
}

var csvHeader = []string{"elapsed_s", "rss_bytes", "rss_anon_bytes", "rss_file_bytes", "goroutines", "open_fds", "spool_bytes", "accepted", "printed", "heap_inuse_bytes"}

// takeSample reads the agent's resources; a value that could not be read
// is NaN (an empty CSV cell), left out of the verdict.
func takeSample(pid int, base, dir string) sampleRow {
	s := sampleRow{RSS: math.NaN(), RSSAnon: math.NaN(), RSSFile: math.NaN(), Goroutines: math.NaN(), FDs: math.NaN(), Spool: math.NaN(), Heap: math.NaN()}
	if st, err := readStatus(pid); err == nil {
		s.RSS, s.RSSAnon, s.RSSFile = st["VmRSS"], st["RssAnon"], st["RssFile"]
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.FDs = float64(len(ents))
	}
	if m, err := scrapeMetrics(base, "go_goroutines", "go_memstats_heap_inuse_bytes"); err == nil {
		s.Goroutines, s.Heap = m["go_goroutines"], m["go_memstats_heap_inuse_bytes"]
	}
	if fi, err := os.Stat(filepath.Join(dir, "spool.db")); err == nil {
		s.Spool = float64(fi.Size())
	}
	return s
}

// readStatus returns the kB fields of /proc/<pid>/status in bytes.
func readStatus(pid int) (map[string]float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("read status: %w", err)
	}
	return parseStatus(string(b)), nil
}

func parseStatus(s string) map[string]float64 {
	m := map[string]float64{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		if n, err := strconv.ParseFloat(f[0], 64); err == nil {
			m[k] = n * 1024
		}
	}
	return m
}

// scrapeMetrics reads unlabelled samples of names from the agent's
// /metrics (the Go collector is registered by agent/metrics). A name not
// found is NaN.
func scrapeMetrics(base string, names ...string) (map[string]float64, error) {
	c := apiclient.New(base, soakToken, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}})
	resp, err := c.Open(context.Background(), http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape metrics: HTTP %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	out := map[string]float64{}
	for _, n := range names {
		v, err := metricValue(bytes.NewReader(b), n)
		if err != nil {
			v = math.NaN()
		}
		out[n] = v
	}
	return out, nil
}

// metricValue finds an unlabelled sample of name in Prometheus text format.
func metricValue(r io.Reader, name string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return 0, fmt.Errorf("metric %s: %w", name, err)
			}
			return v, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read metrics: %w", err)
	}
	return 0, fmt.Errorf("metric %s not found", name)
}

// recorder appends rows to the CSV as they come, so a run cut short still
// leaves its data.
type recorder struct {
	f    *os.File
	w    *csv.Writer
	rows []sampleRow
	err  error
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create csv: %w", err)
	}
	r := &recorder{f: f, w: csv.NewWriter(f)}
	r.write(csvHeader)
	return r, r.err
}

func (r *recorder) add(s sampleRow) {
	r.rows = append(r.rows, s)
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	r.write([]string{strconv.FormatFloat(s.Elapsed, 'f', 1, 64), num(s.RSS), num(s.RSSAnon), num(s.RSSFile), num(s.Goroutines), num(s.FDs), num(s.Spool), strconv.Itoa(s.Accepted), strconv.Itoa(s.Printed), num(s.Heap)})
}

func (r *recorder) write(rec []string) {
	if r.err != nil {
		return
	}
	r.w.Write(rec)
	r.w.Flush()
	if err := r.w.Error(); err != nil {
		r.err = fmt.Errorf("write csv: %w", err)
	}
}

// close finishes the CSV; it is safe to call twice.
func (r *recorder) close() error {
	if r.f == nil {
		return r.err
	}
	if err := r.f.Close(); err != nil && r.err == nil {
		r.err = fmt.Errorf("close csv: %w", err)
	}
	r.f = nil
	return r.err
}

// Rejudge reads a CSV a run wrote and judges and plots it again, as the
// run would have at its end. The tasks are the last sample's counts (taken
// before the run's drain, so printed may trail accepted); o supplies the
// retention, rate and seed of the run for the verdict and the title.
func Rejudge(path string, o Options) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open csv: %w", err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read csv %s: %w", path, err)
	}
	// CSVs written before heap_inuse_bytes was added lack the last column.
	if len(recs) < 2 || !strings.HasPrefix(strings.Join(csvHeader, ","), strings.Join(recs[0], ",")) || len(recs[0]) < len(csvHeader)-1 {
		return nil, fmt.Errorf("%s: not a soak CSV (header %v)", path, recs[0])
	}
	var rows []sampleRow
	for _, r := range recs[1:] {
		num := func(i int) float64 {
			if i >= len(r) {
				return math.NaN()
			}
			v, err := strconv.ParseFloat(r[i], 64)
			if err != nil {
				return math.NaN()
			}
			return v
		}
		rows = append(rows, sampleRow{Elapsed: num(0), RSS: num(1), RSSAnon: num(2), RSSFile: num(3), Goroutines: num(4),
			FDs: num(5), Spool: num(6), Accepted: int(num(7)), Printed: int(num(8)), Heap: num(9)})
	}
	last := rows[len(rows)-1]
	rep := &Report{Seed: o.Seed, Ran: time.Duration(last.Elapsed * float64(time.Second)), Accepted: last.Accepted, Printed: last.Printed,
		Refused: map[string]int{}, Faults: map[printertest.FaultKind]int{}, CSVPath: path, FromCSV: true}
	rep.Verdicts = judge(rows, o)
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	rep.SVGPath = filepath.Join(o.Out, "soak.svg")
	if err := writePlot(rep.SVGPath, rows, rep, o); err != nil {
		return nil, err
	}
	return rep, nil
}
