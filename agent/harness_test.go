package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent/config"
	"printgate/drivers/escpos"
	"printgate/drivers/escpos/decode"
	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/spool"
)

// testSession keeps silent printers from costing seconds: answers expected
// to be missing get a short wait, answers expected get a generous one.
var testSession = escpos.SessionOptions{
	ProbeTimeout:   300 * time.Millisecond,
	AnswerTimeout:  3 * time.Second,
	BarrierTimeout: 5 * time.Second,
	WriteTimeout:   3 * time.Second,
}

// waitLimit bounds every wait on real I/O; it is generous because the test
// machine is shared, and no test sleeps: they wait on events.
const waitLimit = 20 * time.Second

// printerSpec describes one emulated printer of a harness.
type printerSpec struct {
	name   string
	model  printertest.Model
	extra  string                  // more TOML keys for its [[printers]] table
	faults []printertest.FaultKind // switched on before the agent starts
	// dbcs is the set of the printer's Kanji font (GB18030 by default).
	dbcs decode.DoubleByte
	// onTicket is called as each ticket is cut.
	onTicket func(printertest.Ticket)
}

// harness runs a real agent over a real spool and emulated printers on
// loopback, with every agent timer on a fake clock.
type harness struct {
	t      testing.TB
	clock  *clock.FakeClock
	sp     *spool.Spool
	a      *Agent
	cfg    *config.Config
	p      map[string]*printertest.Printer
	cancel context.CancelFunc
	done   chan error

	limit time.Duration // bound on each wait; default waitLimit

	mu      sync.Mutex
	events  []Event
	changed chan struct{}
}

// harnessSpool turns the doors' rates off: the core's tests set their own
// pace (doors_test.go turns the rates on).
const harnessSpool = "[spool]\nrate_api = 0\nrate_cloud = 0\nrate_raw = 0\nrate_reprint = 0\n"

func newHarness(t testing.TB, specs []printerSpec, defaults string, tweak ...func(*Options)) *harness {
	t.Helper()
	return buildHarness(t, clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), specs, defaults, tweak...)
}

// newRealHarness is newHarness on the real clock, for stress tests whose
// retries must run without a hand-advanced clock; h.clock is nil.
func newRealHarness(t testing.TB, specs []printerSpec, defaults string, tweak ...func(*Options)) *harness {
	t.Helper()
	return buildHarness(t, nil, specs, defaults, tweak...)
}

func buildHarness(t testing.TB, clock *clock.FakeClock, specs []printerSpec, defaults string, tweak ...func(*Options)) *harness {
	t.Helper()
	return buildHarnessAt(t, t.TempDir(), spool.Options{}, clock, specs, defaults, tweak...)
}

// buildHarnessAt is buildHarness with the spool in dir and opened with so
// (its clock is set by the harness).
func buildHarnessAt(t testing.TB, spoolDir string, so spool.Options, clock *clock.FakeClock, specs []printerSpec, defaults string, tweak ...func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, clock: clock, p: map[string]*printertest.Printer{}, changed: make(chan struct{}), limit: waitLimit}
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir = %q\nlisten = \"127.0.0.1:8631\"\napi_token = \"test-token-0123456789abcdef\"\n%s[defaults]\n%s\n", dir, harnessSpool, defaults)
	for _, s := range specs {
		p := printertest.New(printertest.Options{Name: s.name, Model: s.model, OnTicket: s.onTicket, DoubleByte: s.dbcs})
		if err := p.ListenTCP(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		h.p[s.name] = p
		fmt.Fprintf(&b, "[[printers]]\nname = %q\nurl = \"tcp://%s\"\n%s\n", s.name, p.Addr(), s.extra)
	}
	cfg, err := config.Parse(filepath.Join(dir, "printgate.toml"), []byte(b.String()))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	h.cfg = cfg
	for _, s := range specs {
		for _, f := range s.faults {
			if err := h.p[s.name].SetFault(f, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := time.Now
	if clock != nil {
		now = clock.Now
	}
	so.Now = now
	sp, err := spool.Open(filepath.Join(spoolDir, "spool.db"), so)
	if err != nil {
		t.Fatal(err)
	}
	h.sp = sp
	h.start(tweak...)
	t.Cleanup(func() {
		h.stop()
		sp.Close()
	})
	return h
}

func testLogger() *slog.Logger {
	if os.Getenv("PRINTGATE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// start runs a fresh agent over the harness's spool and printers.
func (h *harness) start(tweak ...func(*Options)) {
	h.t.Helper()
	var clock clock.Clock = clock.RealClock()
	if h.clock != nil {
		clock = h.clock
	}
	opts := Options{Clock: clock, Logger: testLogger(), Observe: h.observe, StopGrace: 5 * time.Second, JobTimeout: 10 * time.Second,
		OpenPrinter: func(pc *config.Printer) Printer { return openDevice(pc, testSession, nil, nil) }}
	for _, f := range tweak {
		f(&opts)
	}
	a, err := New(h.cfg, h.sp, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.a, h.cancel, h.done = a, cancel, make(chan error, 1)
	go func() { h.done <- a.Run(ctx) }()
	select {
	case <-a.started:
	case err := <-h.done:
		h.t.Fatalf("agent did not start: %v", err)
	}
}

// stop ends the agent and waits for Run to return.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("agent run: %v", err)
		}
	case <-time.After(waitLimit):
		// Where it hangs is the whole story: keep every goroutine's stack.
		var stacks bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&stacks, 2)
		h.t.Fatalf("agent did not stop; its goroutines:\n%s", stacks.String())
	}
}

func (h *harness) observe(e Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// waitFor waits until some observed event satisfies ok, and returns it.
func (h *harness) waitFor(what string, ok func(Event) bool) Event {
	h.t.Helper()
	limit := time.NewTimer(h.limit)
	defer limit.Stop()
	seen := 0
	for {
		h.mu.Lock()
		evs, ch := h.events[seen:], h.changed
		seen = len(h.events)
		h.mu.Unlock()
		for _, e := range evs {
			if ok(e) {
				return e
			}
		}
		select {
		case <-ch:
		case <-limit.C:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitUntil waits until cond holds, checking it again after every event.
func (h *harness) waitUntil(what string, cond func() bool) {
	h.t.Helper()
	limit := time.NewTimer(h.limit)
	defer limit.Stop()
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// inState reports whether every task is in state in the spool.
func (h *harness) inState(state spool.State, taskNos ...string) bool {
	for _, no := range taskNos {
		if t, err := h.sp.Get(no); err != nil || t.State != state {
			return false
		}
	}
	return true
}

// waitTask waits until taskNo has entered state (now or earlier in the run).
func (h *harness) waitTask(taskNo string, state spool.State) *spool.Task {
	h.t.Helper()
	return h.waitFor(taskNo+" "+string(state), func(e Event) bool {
		return e.Err == nil && e.Task != nil && e.Task.TaskNo == taskNo && e.Task.State == state
	}).Task
}

// waitPrinter waits until printer's lane has reported state.
func (h *harness) waitPrinter(printer, state string) {
	h.t.Helper()
	h.waitFor(printer+" "+state, func(e Event) bool { return e.Task == nil && e.Printer == printer && e.State == state })
}

// count returns how many observed events satisfy ok.
func (h *harness) count(ok func(Event) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if ok(e) {
			n++
		}
	}
	return n
}

// submit accepts a document task whose ticket says its task_no.
func (h *harness) submit(taskNo, printer string, mod ...func(*spool.NewTask)) *spool.Task {
	h.t.Helper()
	nt := spool.NewTask{TaskNo: taskNo, Printer: printer, Document: []byte(fmt.Sprintf(`{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}`, taskNo))}
	for _, f := range mod {
		f(&nt)
	}
	t, dup, err := h.a.Submit(context.Background(), nt)
	if err != nil || dup {
		h.t.Fatalf("submit %s: dup=%v err=%v", taskNo, dup, err)
	}
	return t
}

// tickets waits for n tickets at printer and returns them.
func (h *harness) tickets(printer string, n int) []printertest.Ticket {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ts, err := h.p[printer].WaitTickets(ctx, n)
	if err != nil {
		h.t.Fatalf("printer %s: %v (have %d tickets)", printer, err, len(h.p[printer].Tickets()))
	}
	return ts
}

// printedOrder lists the task_nos printed at printer, in paper order.
func printedOrder(ts []printertest.Ticket) []string {
	var out []string
	for _, t := range ts {
		for _, l := range t.Lines {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "TICKET" {
				out = append(out, f[1])
			}
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// settle lets printer's lane act on everything posted to it so far (a
// refresh's reading included, when the monitor has delivered it) and
// reports whether a job is in flight: a test asserting that nothing printed
// asserts it after the lane had every chance to print.
func (h *harness) settle(printer string) laneIdle {
	h.t.Helper()
	reply := make(chan laneIdle, 1)
	h.a.lanes[printer].post(msgBarrier{reply: reply})
	select {
	case r := <-reply:
		return r
	case <-time.After(h.limit):
		h.t.Fatalf("lane %s did not settle", printer)
	}
	return laneIdle{}
}
