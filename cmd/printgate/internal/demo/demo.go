// Package demo is printgate demo: the whole product in one process with no
// hardware and no account (the reference cloud, three emulated printers and
// the agent with its page, all on 127.0.0.1), and six scripted steps that
// show pairing, tickets through every door, a failover and a WAN outage.
// It is the one part of the release binary that links the test doubles
// drivers/printertest and sync/cloudtest.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"printgate/agent"
	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/agent/daemon"
	"printgate/agent/web"
	"printgate/drivers/printertest"
	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// The demo's fixed choices.
const (
	// demoPIN is the manager PIN the demo sets, printed for the person
	// trying the page.
	demoPIN = "246810"
	// DefaultListen is the agent's address unless --listen says
	// otherwise: the config's own default.
	DefaultListen = "127.0.0.1:8631"
	// demoSteps is how many scripted steps the demo announces.
	demoSteps = 6
	// demoStepWait bounds each wait for what a step shows (a ticket, a
	// failover, a replay), so a broken build fails instead of hanging.
	demoStepWait = 45 * time.Second
	// demoOutage is how long the WAN stays cut at least.
	demoOutage = 3 * time.Second
)

// Demo is one run of `printgate demo`: what it started, to stop it all.
type Demo struct {
	out    *lockedWriter
	client *http.Client // the demo's own requests: pairing and the LAN API

	dir     string // the demo's directory; data in dir/data
	keepDir bool   // --dir was given: leave it in place
	dataDir string

	cloud     *cloudtest.Cloud
	cloudURL  string // host:port
	cloudStop func()

	printers map[string]*printertest.Printer
	frontRaw string // front's raw port, host:port (a POS prints to it as to port 9100)

	pageURL   string // http://host:port/
	apiToken  string
	api       *apiclient.Client // the agent's LAN API, to follow its tasks
	settled   uint64            // the seq of the last task a step saw end
	agentID   string
	stopAgent context.CancelFunc
	agentDone chan error // RunService's result; nil until the agent starts

	run1 string // this run's stamp, so task numbers differ between runs
}

// New is a demo that writes its steps and tickets to stdout.
func New(stdout io.Writer) *Demo {
	return &Demo{
		out:      &lockedWriter{w: stdout},
		client:   &http.Client{Timeout: 30 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()},
		printers: map[string]*printertest.Printer{},
		run1:     time.Now().Format("20060102-150405"),
	}
}

// lockedWriter serializes whole writes: step lines come from the demo's
// goroutine, tickets from each printer's.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// say writes one line (or several) at once.
func (d *Demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

func (d *Demo) step(n int, what string) {
	d.say("\n== step %d/%d: %s", n, demoSteps, what)
}

// Run starts everything and plays the steps, then waits for ctx. It
// returns nil when ctx ends (Ctrl-C or --duration), at whatever point.
// duration is only said: ctx ends the demo. Close stops what it started.
func (d *Demo) Run(ctx context.Context, dir, listen string, duration time.Duration) error {
	err := d.play(ctx, dir, listen, duration)
	if err != nil && ctx.Err() != nil {
		d.say("\n(stopped before the steps were done)")
		return nil
	}
	return err
}

func (d *Demo) play(ctx context.Context, dir, listen string, duration time.Duration) error {
	if err := d.setUp(dir, listen); err != nil {
		return err
	}
	d.banner("printgate demo: the whole product on this computer, no hardware, no account",
		"open the page once step 3 has started the agent; Ctrl-C stops everything")

	d.step(1, "the reference cloud and three emulated printers start on 127.0.0.1")
	d.say("   cloud    http://%s   (sync/cloudtest: a test double of the printgate cloud, in memory)", d.cloudURL)
	for _, name := range []string{"kitchen", "bar", "front"} {
		p := d.printers[name]
		d.say("   %-8s tcp://%s   (%s)", name, p.Addr(), map[string]string{
			"kitchen": "a Chinese clone; bar is its backup",
			"bar":     "a Chinese clone",
			"front":   "an Epson",
		}[name])
	}
	d.say("   config   %s", filepath.Join(d.dir, "printgate.toml"))

	d.step(2, "the agent pairs with the cloud through the device flow (what `printgate pair` does)")
	if err := d.pair(ctx); err != nil {
		return err
	}

	d.step(3, "the agent starts, with its page and the LAN API")
	if err := d.startAgent(ctx); err != nil {
		return err
	}

	d.step(4, "sample tickets, in Chinese and English, through the cloud, the LAN API and a printer port")
	if err := d.tickets(ctx); err != nil {
		return err
	}

	d.step(5, "the kitchen printer goes offline; its tickets fail over to bar")
	if err := d.failover(ctx); err != nil {
		return err
	}

	d.step(6, "the internet goes down; local tickets keep printing, then the agent replays what the cloud missed")
	if err := d.outage(ctx); err != nil {
		return err
	}

	end := "Ctrl-C stops everything"
	if duration > 0 {
		end = fmt.Sprintf("it stops by itself %s after it started (--duration), or at Ctrl-C", duration)
	}
	d.say("\n== all %d steps done; the demo keeps running", demoSteps)
	d.banner("the agent keeps serving its page and API; "+end,
		"send your own ticket (a task request: testdata/demo/task.json):",
		"  "+d.curlHint())
	<-ctx.Done()
	return nil
}

// demoTaskFile is the sample task request the closing hint sends, as a
// path from the repository's root, where `make demo` runs.
const demoTaskFile = "testdata/demo/task.json"

// curlHint is the command that sends the sample task to the agent, which
// works as pasted (it once named a ticket.json that did not exist):
// from the repository's root it names testdata/demo/task.json;
// run anywhere else, a copy the demo writes in its directory.
func (d *Demo) curlHint() string {
	file := demoTaskFile
	if b, err := os.ReadFile(file); err != nil || string(b) != demoTask {
		file = filepath.Join(d.dir, "task.json")
		if err := os.WriteFile(file, []byte(demoTask), 0o644); err != nil {
			d.say("note: cannot write the sample task %s: %v", file, err)
		}
	}
	return fmt.Sprintf("curl -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' --data-binary @%s %sapi/v1/tasks", d.apiToken, file, d.pageURL)
}

// banner shows the page's address and the PIN where nobody misses them.
func (d *Demo) banner(lines ...string) {
	rule := strings.Repeat("═", 78)
	d.say("\n%s\n  manager page  %s\n  PIN           %s", rule, d.pageURL, demoPIN)
	for _, l := range lines {
		d.say("  %s", l)
	}
	d.say("%s", rule)
}

// setUp makes the directory, starts the cloud and the printers, and writes
// the config, the PIN and the agent id: everything before the steps.
func (d *Demo) setUp(dir, listen string) error {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("--dir %s: %w", dir, err)
		}
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return fmt.Errorf("--dir: %w", err)
		}
		d.dir, d.keepDir = abs, true
	} else {
		tmp, err := os.MkdirTemp("", "printgate-demo-")
		if err != nil {
			return fmt.Errorf("make the demo's directory: %w", err)
		}
		d.dir = tmp
	}
	d.dataDir = filepath.Join(d.dir, "data")

	if err := d.startCloud(); err != nil {
		return err
	}
	for _, p := range []struct {
		name  string
		model printertest.Model
	}{{"kitchen", printertest.ModelClone}, {"bar", printertest.ModelClone}, {"front", printertest.ModelEpson}} {
		pr := printertest.New(printertest.Options{
			Name: p.name, Model: p.model, PowerOnCJK: p.model == printertest.ModelClone,
			Addr: "127.0.0.1:0", OnTicket: d.draw(p.name),
		})
		d.printers[p.name] = pr
		if err := pr.ListenTCP(); err != nil {
			return fmt.Errorf("start the emulated printer %s: %w", p.name, err)
		}
	}

	addr, note, err := pickListen(listen)
	if err != nil {
		return err
	}
	if note != "" {
		d.say("note: %s", note)
	}
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	d.pageURL = "http://" + net.JoinHostPort(host, port) + "/"
	d.apiToken = config.NewToken()

	// front's raw port: a free loopback port, taken when the agent starts.
	d.frontRaw, err = pickRawPort(addr, func() (net.Listener, error) { return listenBelowEphemeral("127.0.0.1") })
	if err != nil {
		return fmt.Errorf("pick a port for front's raw port: %w", err)
	}

	conf := strings.NewReplacer(
		"@DATA@", d.dataDir, "@LISTEN@", addr, "@TOKEN@", d.apiToken, "@CLOUD@", d.cloudURL,
		"@KITCHEN@", d.printers["kitchen"].Addr(), "@BAR@", d.printers["bar"].Addr(), "@FRONT@", d.printers["front"].Addr(),
		"@FRONTRAW@", d.frontRaw,
	).Replace(demoConfig)
	if err := os.WriteFile(filepath.Join(d.dir, "printgate.toml"), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write the demo config: %w", err)
	}
	if err := web.SetPIN(d.dataDir, demoPIN); err != nil {
		return fmt.Errorf("set the demo PIN: %w", err)
	}
	id, err := agent.LoadOrCreateAgentID(d.dataDir)
	if err != nil {
		return err
	}
	d.agentID = id
	return nil
}

// startCloud serves the reference cloud on a free loopback port.
func (d *Demo) startCloud() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("start the reference cloud: %w", err)
	}
	// A one-second poll: the device flow's approval shows at once.
	d.cloud = cloudtest.New(cloudtest.Options{PollInterval: time.Second})
	srv := &http.Server{Handler: d.cloud.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ln) }()
	d.cloudURL = ln.Addr().String()
	d.cloudStop = func() {
		d.cloud.Close() // websockets are hijacked: Shutdown does not end them
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-served
	}
	return nil
}

// pickRawPort returns the address of a free port from listen (which
// binds a free loopback port) that is not the port of the agent's listen
// address. That port was probed and closed just before and is free again,
// and a system that hands out ports in turn (Windows, Wine) can give it
// out next: the agent then refuses its own config (raw_listen takes the
// port of listen). A port that clashes is held while another is taken.
func pickRawPort(listenAddr string, listen func() (net.Listener, error)) (string, error) {
	_, avoid, _ := net.SplitHostPort(listenAddr)
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range 3 {
		ln, err := listen()
		if err != nil {
			return "", err
		}
		held = append(held, ln)
		if _, port, _ := net.SplitHostPort(ln.Addr().String()); port != avoid {
			return ln.Addr().String(), nil
		}
	}
	return "", fmt.Errorf("every free port offered was the listen port %s", avoid)
}

// pickListen returns addr if it can be listened on, else a free port on
// the same host and a note saying so.
func pickListen(addr string) (chosen, note string, err error) {
	if host, port, serr := net.SplitHostPort(addr); serr == nil && port == "0" {
		if ln, err := listenBelowEphemeral(host); err == nil {
			chosen = ln.Addr().String()
			ln.Close()
			return chosen, "", nil
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		chosen = ln.Addr().String()
		ln.Close()
		return chosen, "", nil
	}
	host, _, serr := net.SplitHostPort(addr)
	if serr != nil {
		return "", "", fmt.Errorf("--listen %q: %w", addr, serr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err2 := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err2 != nil {
		return "", "", fmt.Errorf("--listen %s: %w", addr, err)
	}
	chosen = ln.Addr().String()
	ln.Close()
	return chosen, fmt.Sprintf("%s is busy (%v); the agent listens on %s instead", addr, err, chosen), nil
}

// Ports the demo chooses for the agent are picked below the systems'
// ephemeral ranges (Linux 32768-60999, Windows 49152-65535): the demo
// probes a port and closes it before the agent binds it, and a port from
// the ephemeral range could meanwhile be handed to any program that
// listens on port 0 (other tests, side by side), which the agent would
// then find taken.
const (
	stablePortLow  = 20000
	stablePortHigh = 32000
)

// listenBelowEphemeral listens on a free port of host between
// stablePortLow and stablePortHigh, or on port 0 when none of a few
// random tries is free.
func listenBelowEphemeral(host string) (net.Listener, error) {
	if host == "" {
		host = "127.0.0.1"
	}
	for range 64 {
		port := stablePortLow + rand.IntN(stablePortHigh-stablePortLow)
		if ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err == nil {
			return ln, nil
		}
	}
	return net.Listen("tcp", net.JoinHostPort(host, "0"))
}

// draw is a printer's OnTicket: the ticket as it came out, drawn in the
// terminal under the printer's name.
func (d *Demo) draw(name string) func(printertest.Ticket) {
	return func(t printertest.Ticket) {
		var b bytes.Buffer
		_ = printertest.Render(&b, name, t)
		var out strings.Builder
		fmt.Fprintf(&out, "   %s printed:\n", name)
		for _, l := range strings.SplitAfter(strings.TrimRight(b.String(), "\n"), "\n") {
			out.WriteString("      " + l)
		}
		out.WriteString("\n")
		io.WriteString(d.out, out.String())
	}
}

// pair runs the device flow against the reference cloud and approves the
// code as a manager scanning the QR would, then saves the device token.
func (d *Demo) pair(ctx context.Context) error {
	p, err := pair.Start(ctx, "http://"+d.cloudURL+"/oauth", d.client)
	if err != nil {
		return fmt.Errorf("pairing: %w", err)
	}
	qr, err := pair.QRText(p.URL())
	if err != nil {
		return fmt.Errorf("pairing: %w", err)
	}
	d.say("   A manager scans this QR code with a phone signed in to the cloud,\n   or opens %s and types the code.\n", p.VerificationURI)
	io.WriteString(d.out, qr)
	d.say("\n   %s\n   code: %s", p.URL(), p.UserCode)
	d.say("   the demo approves the code in the reference cloud, as the manager would")
	if err := d.cloud.Approve(p.UserCode); err != nil {
		return fmt.Errorf("approve the pairing: %w", err)
	}
	tok, err := p.Wait(ctx)
	if err != nil {
		return fmt.Errorf("pairing: %w", err)
	}
	if err := pair.Save(d.dataDir, tok); err != nil {
		return err
	}
	d.say("   paired: the device token is saved in %s", pair.TokenPath(d.dataDir))
	return nil
}

// startAgent runs the agent in this process with the demo's config, and
// waits for its page and its cloud link.
func (d *Demo) startAgent(ctx context.Context) error {
	actx, stop := context.WithCancel(context.Background())
	d.stopAgent, d.agentDone = stop, make(chan error, 1)
	cfgPath := filepath.Join(d.dir, "printgate.toml")
	// Its log goes to printgate.log in the data dir, not over the tickets.
	// Its printers are emulated: the page offers none of this PC's devices.
	go func() {
		d.agentDone <- daemon.RunServiceWith(actx, cfgPath, nil, daemon.ServiceOptions{EmulatedOnly: true})
	}()

	wctx, cancel := context.WithTimeout(ctx, demoStepWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := d.client.Get(d.pageURL + "healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-d.agentDone:
			d.agentDone <- err // close reads it again
			return fmt.Errorf("the agent stopped at start: %v (its log: %s)", err, filepath.Join(d.dataDir, "printgate.log"))
		case <-wctx.Done():
			return fmt.Errorf("the agent's page did not answer on %s: %w", d.pageURL, wctx.Err())
		case <-tick.C:
		}
	}
	d.api = apiclient.New(d.pageURL, d.apiToken, d.client)
	// A kept --dir holds the tasks of earlier runs: the steps follow only
	// the tasks accepted from here on.
	if err := d.skipEarlierTasks(wctx); err != nil {
		return err
	}
	d.say("page: %s   (PIN %s)", d.pageURL, demoPIN)
	d.say("   the LAN API answers at %sapi/v1/ with the token %s", d.pageURL, d.apiToken)
	d.say("   the agent's log: %s", filepath.Join(d.dataDir, "printgate.log"))
	if err := d.cloud.WaitConnected(wctx, d.agentID, true); err != nil {
		return fmt.Errorf("the agent did not connect to the cloud: %w", err)
	}
	d.say("   cloud link up: agent %s is connected to the reference cloud", d.agentID)
	return nil
}

// taskNo names the demo's n-th task for printer, unique to this run so a
// kept --dir does not answer "duplicate".
func (d *Demo) taskNo(n int, printer string) string {
	return fmt.Sprintf("DEMO%s-%02d_%s_v1", d.run1, n, strings.ToUpper(printer))
}

// viaLAN submits a document over the LAN API, as a POS would.
func (d *Demo) viaLAN(ctx context.Context, taskNo, printer, doc string) error {
	body, err := json.Marshal(map[string]any{"task_no": taskNo, "printer": printer, "document": json.RawMessage(doc)})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.pageURL+"api/v1/tasks", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return fmt.Errorf("submit %s over the LAN API: %w", taskNo, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("submit %s over the LAN API: %s: %s", taskNo, resp.Status, bytes.TrimSpace(answer))
	}
	var a struct {
		State spool.State `json:"state"`
	}
	_ = json.Unmarshal(answer, &a)
	d.say("   LAN API → %-7s %s   (%d %s)", printer, taskNo, resp.StatusCode, a.State)
	return nil
}

// viaCloud queues a document as a job in the cloud, which pushes it to
// the agent over its link.
func (d *Demo) viaCloud(taskNo, printer, doc string) error {
	if err := d.cloud.Queue(d.agentID, wire.Job{TaskNo: taskNo, Printer: printer, Document: json.RawMessage(doc)}); err != nil {
		return fmt.Errorf("queue %s in the cloud: %w", taskNo, err)
	}
	d.say("   cloud   → %-7s %s   (a job pushed over the agent's link)", printer, taskNo)
	return nil
}

// counts says how many tickets each printer has cut so far.
func (d *Demo) counts() map[string]int {
	m := map[string]int{}
	for name, p := range d.printers {
		m[name] = len(p.Tickets())
	}
	return m
}

// waitPrinted waits until each printer in more has cut that many tickets
// more than in base.
func (d *Demo) waitPrinted(ctx context.Context, base, more map[string]int) error {
	ctx, cancel := context.WithTimeout(ctx, demoStepWait)
	defer cancel()
	for name, n := range more {
		if _, err := d.printers[name].WaitTickets(ctx, base[name]+n); err != nil {
			return fmt.Errorf("%s did not print %d tickets: %w", name, n, err)
		}
	}
	return nil
}

func (d *Demo) tickets(ctx context.Context) error {
	base := d.counts()
	if err := d.viaLAN(ctx, d.taskNo(1, "kitchen"), "kitchen", demoKitchenZH); err != nil {
		return err
	}
	if err := d.viaLAN(ctx, d.taskNo(2, "front"), "front", demoReceiptEN); err != nil {
		return err
	}
	if err := d.viaCloud(d.taskNo(3, "bar"), "bar", demoBarZH); err != nil {
		return err
	}
	if err := d.viaCloud(d.taskNo(4, "front"), "front", demoFront); err != nil {
		return err
	}
	if err := d.viaRawPort(ctx, d.frontRaw, []byte(demoRawTicket)); err != nil {
		return err
	}
	// The printers' cuts are not the end of a ticket: the agent still waits
	// for each printer to confirm it. Unplugging kitchen in the next step
	// before its confirmation came would leave that ticket's outcome unknown,
	// and it would print again, marked, at bar.
	if err := d.settle(ctx, 5); err != nil {
		return err
	}
	return d.waitPrinted(ctx, base, map[string]int{"kitchen": 1, "bar": 1, "front": 3})
}

// settle waits until the agent holds n tasks more than the last step saw
// end, each in a final state, and says of any that did not end PRINTED, once
// and plainly: the demo means every ticket to print once, so anything else
// (an unknown outcome reprinted as a possible duplicate, a failure) is not
// part of the show, and a person watching must not take it for one.
func (d *Demo) settle(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, demoStepWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last []apiclient.Task
	for {
		var page struct {
			Tasks []apiclient.Task `json:"tasks"`
		}
		_, err := d.api.Do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks?after=%d&limit=100", d.settled), nil, &page)
		if err == nil {
			last = page.Tasks
			if len(last) >= n && allTerminal(last) {
				break
			}
		}
		select {
		case <-ctx.Done():
			var states []string
			for _, t := range last {
				states = append(states, t.TaskNo+" "+t.State)
			}
			return fmt.Errorf("the agent did not finish %d tickets (it has: %s): %w", n, strings.Join(states, ", "), ctx.Err())
		case <-tick.C:
		}
	}
	for _, t := range last {
		d.settled = max(d.settled, t.Seq)
		if t.State == "PRINTED" && !t.PossibleDuplicate {
			continue
		}
		what := t.State
		if t.Reason != "" {
			what += " (" + t.Reason + ")"
		}
		if t.PossibleDuplicate {
			what += ", printed again under POSSIBLE DUPLICATE because the agent could not tell whether its first print came out"
		}
		d.say("   note: %s ended %s; the demo did not mean to show this (the agent's log: %s)", t.TaskNo, what, filepath.Join(d.dataDir, "printgate.log"))
	}
	return nil
}

// skipEarlierTasks sets settled past every task the agent already holds
// (a kept --dir's earlier runs), a page of the list at a time.
func (d *Demo) skipEarlierTasks(ctx context.Context) error {
	for {
		var page struct {
			Tasks []apiclient.Task `json:"tasks"`
			Next  *uint64          `json:"next"`
		}
		if _, err := d.api.Do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks?after=%d&limit=1000", d.settled), nil, &page); err != nil {
			return fmt.Errorf("list the agent's earlier tasks: %w", err)
		}
		for _, t := range page.Tasks {
			d.settled = max(d.settled, t.Seq)
		}
		if page.Next == nil {
			return nil
		}
	}
}

// allTerminal reports whether every task of ts is in a final state.
func allTerminal(ts []apiclient.Task) bool {
	for _, t := range ts {
		if !t.Terminal() {
			return false
		}
	}
	return true
}

// viaRawPort prints raw ESC/POS bytes to a printer's raw port as a POS with
// no printgate integration does to a printer's port 9100: connect, write,
// close, and wait for the port to close (the job is then on disk).
func (d *Demo) viaRawPort(ctx context.Context, addr string, job []byte) error {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect to the raw port %s: %w", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(demoStepWait))
	if _, err := c.Write(job); err != nil {
		return fmt.Errorf("write to the raw port %s: %w", addr, err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return fmt.Errorf("raw port %s: %w", addr, err)
	}
	if _, err := io.Copy(io.Discard, c); err != nil {
		return fmt.Errorf("the raw port %s did not take the job: %w", addr, err)
	}
	d.say("   raw port → front   %s   (%d ESC/POS bytes, as a POS prints to port 9100; task RAW_front_...)", addr, len(job))
	return nil
}

func (d *Demo) failover(ctx context.Context) error {
	kitchen, bar := d.printers["kitchen"], d.printers["bar"]
	if err := kitchen.SetFault(printertest.FaultOffline, true); err != nil {
		return err
	}
	d.say("   kitchen is unplugged (its port refuses connections)")
	seen := len(bar.Tickets())
	if err := d.viaLAN(ctx, d.taskNo(5, "kitchen"), "kitchen", demoSmall); err != nil {
		return err
	}
	d.say("   the kitchen ticket waits; after failover_after (5s) it moves to bar with a FAILOVER banner…")
	if err := d.settle(ctx, 1); err != nil {
		return fmt.Errorf("no failover to bar: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, demoStepWait)
	defer cancel()
	ts, err := bar.WaitTickets(wctx, seen+1)
	if err != nil {
		return fmt.Errorf("no failover to bar: %w", err)
	}
	if !ts[len(ts)-1].Contains("FAILOVER kitchen → bar") {
		return errors.New("the kitchen ticket printed at bar without its FAILOVER banner")
	}
	if err := kitchen.SetFault(printertest.FaultOffline, false); err != nil {
		return err
	}
	d.say("   kitchen is back; after failback_after (10s) its tickets go to it again")
	return nil
}

func (d *Demo) outage(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, demoStepWait)
	defer cancel()
	before := len(d.cloud.Events(d.agentID))
	d.cloud.SetRefusing(true)
	cut := time.Now()
	d.cloud.DropAll()
	if err := d.cloud.WaitConnected(wctx, d.agentID, false); err != nil {
		return err
	}
	d.say("   WAN cut: the cloud dropped the agent's connection and refuses new ones")
	offline := []string{d.taskNo(6, "bar"), d.taskNo(7, "front")}
	base := d.counts()
	if err := d.viaLAN(ctx, offline[0], "bar", demoBarZH); err != nil {
		return err
	}
	if err := d.viaLAN(ctx, offline[1], "front", demoReceiptEN); err != nil {
		return err
	}
	if err := d.settle(ctx, 2); err != nil {
		return err
	}
	if err := d.waitPrinted(ctx, base, map[string]int{"bar": 1, "front": 1}); err != nil {
		return err
	}
	if left := demoOutage - time.Since(cut); left > 0 {
		t := time.NewTimer(left)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	known := 0
	for _, e := range d.cloud.Events(d.agentID) {
		if e.TaskNo == offline[0] || e.TaskNo == offline[1] {
			known++
		}
	}
	d.say("   both printed with the internet down; the cloud has %d events about them", known)
	d.cloud.SetRefusing(false)
	d.say("   WAN restored: the agent reconnects (with backoff) and replays its outbox…")
	err := d.cloud.Wait(wctx, func() bool {
		for _, no := range offline {
			done := false
			for _, e := range d.cloud.Events(d.agentID) {
				done = done || (e.TaskNo == no && e.State.Terminal())
			}
			if !done {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("the agent did not replay the outage's events: %w", err)
	}
	after := len(d.cloud.Events(d.agentID))
	d.say("   replayed %d events to the cloud after the outage (its event log: %d → %d events); the tickets printed offline are known there now", after-before, before, after)
	return nil
}

// Close stops everything the demo started, the agent first so it does not
// see its printers and cloud vanish, and removes the temporary directory.
func (d *Demo) Close() error {
	var errs []error
	if d.stopAgent != nil {
		d.stopAgent()
		if err := <-d.agentDone; err != nil {
			errs = append(errs, fmt.Errorf("the agent: %w", err))
		}
	}
	if d.cloudStop != nil {
		d.cloudStop()
	}
	for _, p := range d.printers {
		p.Close()
	}
	d.client.CloseIdleConnections()
	if d.dir != "" && !d.keepDir {
		if err := removeTree(d.dir, os.RemoveAll); err != nil {
			errs = append(errs, fmt.Errorf("remove the demo's directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// The demo's documents and config template: copies of the files in
// testdata/demo (the binary runs anywhere, so they are compiled in;
// TestDemoFilesMatchTestdata keeps the two the same).
const (
	demoKitchenZH = `{"lines": [
  {"text": "厨房单 KITCHEN", "align": "center", "bold": true},
  {"text": "桌 12 · 堂食", "align": "center", "size": "2x2", "bold": true},
  {"text": "单号 DEMO-0001", "right": "18:42"},
  {"rule": "-"},
  {"text": "宫保鸡丁", "size": "2x2", "right": "x2"},
  {"text": "鱼香肉丝（少辣，不要葱）", "right": "x1"},
  {"text": "米饭", "right": "x3"},
  {"rule": "-"},
  {"text": "备注: 顾客对花生过敏!", "bold": true, "underline": true},
  {"beep": 1},
  {"cut": "partial"}
]}
`
	demoBarZH = `{"lines": [
  {"text": "吧台 BAR", "align": "center", "size": "2x2", "bold": true},
  {"text": "桌 12", "right": "18:43"},
  {"rule": "-"},
  {"text": "珍珠奶茶 (少冰)", "right": "x2"},
  {"text": "青岛啤酒 Tsingtao", "right": "x3"},
  {"cut": "partial"}
]}
`
	demoReceiptEN = `{"lines": [
  {"text": "NORTH STREET CAFE", "align": "center", "size": "2x2", "bold": true},
  {"text": "12 North Street · Springfield", "align": "center"},
  {"rule": "-"},
  {"text": "Flat white", "right": "3.80"},
  {"text": "Blueberry muffin, warmed", "right": "2.95"},
  {"text": "Sparkling water 500ml", "right": "1.50"},
  {"rule": "-"},
  {"text": "TOTAL", "size": "2x1", "bold": true, "right": "8.25"},
  {"text": "Card ****4242", "right": "PAID"},
  {"qr": "https://example.com/r/DEMO-0002", "size": 6},
  {"text": "Thank you!", "align": "center", "underline": true},
  {"cut": "full"}
]}
`
	demoFront = `{"lines": [
  {"text": "FRONT DESK", "align": "center", "bold": true},
  {"text": "Order 42 ready for pickup", "align": "center"},
  {"barcode": "ORD20261130-0042", "type": "CODE128"},
  {"cut": "partial"}
]}
`
	demoSmall = `{"lines": [
  {"text": "KITCHEN · TABLE 7", "align": "center", "size": "2x2", "bold": true},
  {"text": "Kung Pao Chicken", "right": "x1"},
  {"text": "Mapo Tofu", "right": "x2"},
  {"rule": "-"},
  {"text": "note: no peanuts", "bold": true},
  {"cut": "partial"}
]}
`
	demoTask = `{"task_no": "MY-FIRST-TICKET_v1", "printer": "front", "priority": "normal",
 "document": {"lines": [
  {"text": "MY FIRST TICKET", "align": "center", "size": "2x2", "bold": true},
  {"text": "Sent with curl", "right": "x1"},
  {"rule": "-"},
  {"text": "Sending it again answers duplicate: true and prints nothing: change task_no (_v2) for a new one."},
  {"cut": "partial"}
]}}
`
	// demoRawTicket is what a POS with its own ESC/POS driver sends to a
	// printer's port 9100: reset, centred bold title, lines, a cut.
	demoRawTicket = "\x1b@\x1ba\x01\x1bE\x01RAW PORT ORDER 17\n\x1bE\x00\x1ba\x00" +
		"from a POS that prints to port 9100\n2x LATTE              7.60\n\n\x1dV\x00"

	demoConfig = `# The config printgate demo writes in its data dir: three emulated printers
# and the reference cloud, all in the demo's process on 127.0.0.1. The @NAME@
# marks are filled in by the demo (cmd/printgate/internal/demo/demo.go keeps
# a copy of this file; a test checks the two agree).
data_dir  = '@DATA@'
listen    = "@LISTEN@"
api_token = "@TOKEN@"

[cloud]                   # the reference cloud (sync/cloudtest), a test double
url      = "ws://@CLOUD@/agent/v1"
auth_url = "http://@CLOUD@/oauth"

[defaults]
timeout        = "90s"
failover_after = "5s"     # short, so the demo shows a failover quickly
failback_after = "10s"

[log]
level = "info"

[[printers]]
name    = "kitchen"
url     = "tcp://@KITCHEN@"
profile = "xprinter-80"   # a Chinese clone: GB18030 text
backup  = "bar"

[[printers]]
name    = "bar"
url     = "tcp://@BAR@"
profile = "xprinter-80"

[[printers]]
name    = "front"
url     = "tcp://@FRONT@"
profile = "epson-80"
raw_listen = "@FRONTRAW@"  # a POS that cannot be changed prints here as to port 9100
`
)

// Dir is the demo's directory: its config, spool and log.
func (d *Demo) Dir() string { return d.dir }

// KeepsDir reports that Dir stays after Close (--dir was given).
func (d *Demo) KeepsDir() bool { return d.keepDir }
