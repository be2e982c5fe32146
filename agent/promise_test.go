package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// unknownOnce prints its first job for real and then reports the outcome
// unknown, as a link that died just before the completion answer would.
type unknownOnce struct {
	Printer
	done atomic.Bool
}

func (u *unknownOnce) Print(ctx context.Context, job []byte, id uint64) (escpos.Confirmation, error) {
	conf, err := u.Printer.Print(ctx, job, id)
	if err == nil && u.done.CompareAndSwap(false, true) {
		return 0, fmt.Errorf("test: link died before the completion answer: %w", escpos.ErrOutcomeUnknown)
	}
	return conf, err
}

// TestDoubleDeliveryPrintsOneUnmarkedCopy ensures this interleaving never
// yields two unmarked copies: a task reaches its lane twice (a
// submit racing the restore that also finds it), the printer prints it and
// then reports the outcome unknown once. Exactly one unmarked copy and one
// copy under the POSSIBLE DUPLICATE banner come out, and the spool agrees.
func TestDoubleDeliveryPrintsOneUnmarkedCopy(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.stop()
	nt := spool.NewTask{TaskNo: "DUP_v1", Printer: "k", Document: []byte(`{"lines":[{"text":"TICKET DUP_v1"},{"cut":"partial"}]}`)}
	stored, _, err := h.sp.Accept(nt)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(h.cfg, h.sp, Options{Clock: h.clock, Logger: testLogger(), Observe: h.observe, StopGrace: 5 * time.Second,
		OpenPrinter: func(pc *config.Printer) Printer { return &unknownOnce{Printer: openDevice(pc, testSession, nil, nil)} }})
	if err != nil {
		t.Fatal(err)
	}
	// The second delivery: what a submit that reached the lane before
	// restore had read the spool used to cause.
	a.lanes["k"].post(msgTask{task: stored})
	ctx, cancel := context.WithCancel(context.Background())
	h.a, h.cancel, h.done = a, cancel, make(chan error, 1)
	go func() { h.done <- a.Run(ctx) }()
	// The marked copy waits the retry backoff.
	h.advanceUntil("DUP_v1 PRINTED", time.Second, func() bool { return h.stateOf("DUP_v1") == spool.StatePrinted })
	got, _ := h.sp.Get("DUP_v1")
	if !got.PossibleDuplicate {
		t.Errorf("spool: possible_duplicate=false after an unknown outcome: %+v", got)
	}
	tk := h.tickets("k", 2)
	unmarked, marked := 0, 0
	for _, ticket := range h.p["k"].Tickets() {
		if !strings.Contains(ticket.Text(), "TICKET DUP_v1") {
			continue
		}
		if strings.Contains(ticket.Text(), "POSSIBLE DUPLICATE") {
			marked++
		} else {
			unmarked++
		}
	}
	if unmarked != 1 || marked != 1 {
		t.Errorf("paper has %d unmarked and %d marked copies, want 1 and 1 (%d tickets)", unmarked, marked, len(tk))
	}
	if n := h.count(func(e Event) bool {
		return e.Task != nil && e.Task.TaskNo == "DUP_v1" && e.Task.State == spool.StateSending
	}); n != 2 {
		t.Errorf("task sent %d times, want 2 (the first and the marked reprint)", n)
	}
}

// TestSubmitRefusedUntilRestored ensures intake refuses work (503
// unavailable) until the agent has restored its lanes: a task accepted
// before that would reach its lane twice.
func TestSubmitRefusedUntilRestored(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.stop()
	a, err := New(h.cfg, h.sp, Options{Clock: h.clock, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = a.Submit(context.Background(), spool.NewTask{TaskNo: "EARLY_v1", Printer: "k", Payload: []byte("x")})
	if !errors.Is(err, api.ErrUnavailable) {
		t.Fatalf("submit before restore: %v, want ErrUnavailable", err)
	}
	if _, err := h.sp.Get("EARLY_v1"); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("a refused submit was spooled: %v", err)
	}
}

// panicPrinter is a printer driver with a bug: its Print panics.
type panicPrinter struct{ Printer }

func (panicPrinter) Print(context.Context, []byte, uint64) (escpos.Confirmation, error) {
	panic("test: driver bug")
}

// TestSubmitAnsweredWhenLaneFailsAfterPost has the lane take a task and
// fail on it before Submit returns: the task was accepted while the core
// ran, so Submit answers it accepted; only a core stopped before the hand
// over makes Submit answer unavailable.
func TestSubmitAnsweredWhenLaneFailsAfterPost(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.stop()
	a, err := New(h.cfg, h.sp, Options{Clock: h.clock, Logger: testLogger(), StopGrace: time.Second,
		OpenPrinter: func(pc *config.Printer) Printer { return panicPrinter{openDevice(pc, testSession, nil, nil)} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	<-a.started
	testHookPosted = func(got *Agent) {
		if got != a {
			return // not this test's agent
		}
		// The lane is another goroutine: poll it, bounded.
		for deadline := time.Now().Add(waitLimit); a.Failed() == nil; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the lane never failed on the posted task")
				return
			}
		}
	}
	defer func() { testHookPosted = nil }()
	if _, dup, err := a.Submit(context.Background(), spool.NewTask{TaskNo: "BOOM_v1", Printer: "k", Payload: []byte("x")}); err != nil || dup {
		t.Fatalf("submit whose lane failed after the hand over: dup=%v err=%v, want accepted", dup, err)
	}
	testHookPosted = nil
	if _, _, err := a.Submit(context.Background(), spool.NewTask{TaskNo: "AFTER_v1", Printer: "k", Payload: []byte("x")}); !errors.Is(err, api.ErrUnavailable) {
		t.Errorf("submit after the core failed: %v, want ErrUnavailable", err)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Errorf("Run returned %v, want the core failure", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("agent did not stop")
	}
}

// TestSubmitStoredWhenCoreStopsDuringAccept ensures a task fsync'd in the
// moment its core stopped is answered for what it is: not
// accepted, not "took nothing", but ErrStoredNotPrinting naming the task,
// which still asks for a resend (ErrUnavailable); a resend of the same
// task_no gets the same answer while the core is down, and the task prints
// once after the restart.
func TestSubmitStoredWhenCoreStopsDuringAccept(t *testing.T) {
	var (
		target atomic.Pointer[Agent]
		armed  atomic.Bool
	)
	// The core stops just before the commit that stores the task: after
	// Submit's availability check, before its post.
	stopDuringCommit := func() error {
		if armed.CompareAndSwap(true, false) {
			target.Load().fail(errors.New("test: the core stopped"))
		}
		return nil
	}
	h := buildHarnessAt(t, t.TempDir(), spool.Options{FailCommit: stopDuringCommit}, nil, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	target.Store(h.a)
	armed.Store(true)
	nt := spool.NewTask{TaskNo: "RACE_v1", Printer: "k", Document: []byte(`{"lines":[{"text":"TICKET RACE_v1"},{"cut":"partial"}]}`)}
	for _, what := range []string{"the submit the stop caught", "its resend while the core is down"} {
		_, _, err := h.a.Submit(context.Background(), nt)
		var sn *api.StoredNotPrinting
		if !errors.Is(err, api.ErrStoredNotPrinting) || !errors.Is(err, api.ErrUnavailable) || !errors.As(err, &sn) || sn.TaskNo != "RACE_v1" {
			t.Fatalf("%s: %v, want ErrStoredNotPrinting naming RACE_v1", what, err)
		}
	}
	if _, err := h.sp.Get("RACE_v1"); err != nil {
		t.Fatalf("the task answered stored is not in the spool: %v", err)
	}
	// A task_no the agent does not know is still refused as not taken.
	if _, _, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: "NEW_v1", Printer: "k", Payload: []byte("x")}); errors.Is(err, api.ErrStoredNotPrinting) || !errors.Is(err, api.ErrUnavailable) {
		t.Errorf("a new task after the core stopped: %v, want plain ErrUnavailable", err)
	}
	h.cancel()
	<-h.done
	h.cancel = nil
	h.start()
	if _, dup, err := h.a.Submit(context.Background(), nt); err != nil || !dup {
		t.Errorf("resend after the restart: dup=%v err=%v, want its duplicate", dup, err)
	}
	h.printedOnce([]string{"RACE_v1"}, "k")
}

// TestHealthReportsSalvagedSpool ensures an agent started on a corrupt spool
// says so: /healthz degraded, naming the quarantined file and the count of
// records that could not be read, and a metric.
func TestHealthReportsSalvagedSpool(t *testing.T) {
	dir := t.TempDir()
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(i*7 + i/13)
	}
	if err := os.WriteFile(filepath.Join(dir, "spool.db"), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	h := buildHarnessAt(t, dir, spool.Options{}, nil, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	hl := h.a.Health()
	if hl.Status != "degraded" || !strings.Contains(hl.SpoolQuarantined, "spool.db.corrupt-") || !strings.Contains(hl.Error, hl.SpoolQuarantined) {
		t.Errorf("health after a corrupt spool: %+v", hl)
	}
	h.a.reportIntegrity()
	if got := metricLabelled(t, h.a.m, "printgate_spool_unreadable_records"); got != float64(hl.UnreadableRecords) {
		t.Errorf("unreadable metric %v, health says %d", got, hl.UnreadableRecords)
	}
	// The agent still prints.
	h.submit("AFTER_v1", "k")
	h.waitTask("AFTER_v1", spool.StatePrinted)
}

// TestTimeoutReasonIsPrinterState ensures a task times out with the reason
// of the state its printer is actually in: a task parked while the printer
// was offline, whose printer came back out of paper, times out PAPER_OUT,
// not DEVICE_OFFLINE, even when its deadline had passed before the agent
// started.
func TestTimeoutReasonIsPrinterState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ahead time.Duration // deadline relative to the restart
	}{{"during the run", time.Second}, {"while down", -time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}}}, "")
			h.stop()
			if _, _, err := h.sp.Accept(spool.NewTask{TaskNo: "P_v1", Printer: "k", Payload: []byte("x"), Timeout: 10 * time.Second}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.sp.Transition("P_v1", spool.StateAccepted, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline}); err != nil {
				t.Fatal(err)
			}
			h.clock.Advance(10*time.Second - tc.ahead)
			h.start()
			h.waitPrinter("k", "PAPER_OUT")
			h.clock.Advance(2 * time.Second)
			got := h.waitTask("P_v1", spool.StateTimedOut)
			if got.Reason != spool.ReasonPaperOut {
				t.Errorf("timed out with %s (%s), want PAPER_OUT", got.Reason, got.Message)
			}
		})
	}
}

// TestOfflineIntakeParksInBatches ensures a burst of tasks for an offline
// printer is parked in a few transactions, not one fsync per task, so no
// ACCEPTED backlog builds up behind the lane.
func TestOfflineIntakeParksInBatches(t *testing.T) {
	const n = 600
	var commits atomic.Int64
	count := func() error { commits.Add(1); return nil }
	dir := t.TempDir()
	h := buildHarnessAt(t, dir, spool.Options{FailCommit: count}, nil, []printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultOffline}}}, "")
	h.waitPrinter("k", "OFFLINE")
	h.stop()
	for i := 0; i < n; i++ {
		if _, _, err := h.sp.Accept(spool.NewTask{TaskNo: fmt.Sprintf("B%04d_v1", i), Printer: "k", Payload: []byte("x"), Timeout: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	before := commits.Load()
	h.start()
	h.waitUntil("all parked", func() bool {
		c, _ := h.sp.Counts()
		return c[spool.StateParked] == n
	})
	if got := commits.Load() - before; got > 8 {
		t.Errorf("parking %d restored ACCEPTED tasks took %d commits, want a few batches", n, got)
	}
}

// TestCompletionDowngradeIsReported ensures a job confirmed less strongly
// than the printer's profile promises (a slow GS ( H answer) is recorded
// with the level it actually got, logged at WARN and counted, and that the
// next job, after a re-probe, is confirmed as printed again.
func TestCompletionDowngradeIsReported(t *testing.T) {
	var logs lockedLog
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "", func(o *Options) {
		o.OpenPrinter = nil // the agent's own device, with its reporting
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o.PollIdle = 24 * time.Hour // no status poll re-probes first
	})
	h.waitPrinter("k", "READY")
	// Ten idle minutes: the next job re-probes, and the probe's GS ( H
	// answer comes too late.
	h.p["k"].HoldProcessID(1)
	h.clock.Advance(escpos.DefaultReprobeAfter)
	h.submit("SLOW_v1", "k")
	if got := h.waitTask("SLOW_v1", spool.StatePrinted); got.Confirmation != spool.ConfirmConsumed {
		t.Errorf("job with a held GS ( H answer: confirmation %q, want consumed", got.Confirmation)
	}
	h.p["k"].ReleaseProcessID()
	h.submit("NEXT_v1", "k")
	if got := h.waitTask("NEXT_v1", spool.StatePrinted); got.Confirmation != spool.ConfirmPrinted {
		t.Errorf("job after the re-probe: confirmation %q, want printed", got.Confirmation)
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"completion proof weakened") {
		t.Errorf("no WARN line for the downgrade:\n%s", logs.String())
	}
	if got := metricLabelled(t, h.a.m, "printgate_confirmation_downgrades_total"); got != 1 {
		t.Errorf("downgrade metric %v, want 1", got)
	}
}

// TestUnprintableTextRefusedAtIntake ensures a document with characters
// the printer's encoding cannot print is refused at intake (400
// bad_document) naming the line and the encoding, instead of printing "?".
func TestUnprintableTextRefusedAtIntake(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson, extra: `profile = "epson-80"`}}, "")
	_, _, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: "CJK_v1", Printer: "k",
		Document: []byte(`{"lines":[{"text":"Table 4"},{"text":"宫保鸡丁 x1"}]}`)})
	if !errors.Is(err, api.ErrBadDocument) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "WPC1252") {
		t.Errorf("CJK to epson-80: %v, want bad document naming line 2 and WPC1252", err)
	}
	if _, err := h.sp.Get("CJK_v1"); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("refused task was spooled: %v", err)
	}
	h.submit("LATIN_v1", "k", func(nt *spool.NewTask) { nt.Document = []byte(`{"lines":[{"text":"Crème brûlée"}]}`) })
	h.waitTask("LATIN_v1", spool.StatePrinted)
}

// lockedLog collects log output written from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// metricLabelled sums every series of a counter or gauge family (the
// value itself for an unlabelled one).
func metricLabelled(t *testing.T, m interface {
	Registry() *prometheus.Registry
}, name string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if s.Gauge != nil {
				sum += s.GetGauge().GetValue()
			} else {
				sum += s.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestRunClosesDevices ensures a stopped agent holds no printer connection:
// the emulator sees every connection closed.
func TestRunClosesDevices(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.submit("A_v1", "k")
	h.waitTask("A_v1", spool.StatePrinted)
	h.stop()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.p["k"].WaitConnections(ctx, 0); err != nil {
		t.Errorf("after stop: %v", err)
	}
}

// stuckPrinter never finishes a job on its own: Print returns only when
// its context ends, after closing started.
type stuckPrinter struct {
	Printer
	started chan struct{}
	once    sync.Once
}

func (p *stuckPrinter) Print(ctx context.Context, _ []byte, _ uint64) (escpos.Confirmation, error) {
	p.once.Do(func() { close(p.started) })
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestStopGraceOnAgentClock ensures the stop grace for a job in flight
// runs on the agent's clock, as every timer that decides what the agent
// does: with a grace of an hour, Run returns once that clock has passed
// it, without an hour of wall time.
func TestStopGraceOnAgentClock(t *testing.T) {
	stuck := &stuckPrinter{started: make(chan struct{})}
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "", func(o *Options) {
		o.StopGrace = time.Hour
		o.JobTimeout = 10 * time.Hour
		open := o.OpenPrinter
		o.OpenPrinter = func(pc *config.Printer) Printer { stuck.Printer = open(pc); return stuck }
	})
	h.submit("G_v1", "k")
	<-stuck.started
	stopOnAgentClock(t, h, "Run returned after the stop grace")
}

// stopOnAgentClock stops h's agent and steps its clock until Run returns.
func stopOnAgentClock(t *testing.T, h *harness, what string) {
	t.Helper()
	h.cancel()
	h.cancel = nil
	var err error
	returned := false
	h.advanceUntil(what, 5*time.Minute, func() bool {
		select {
		case err = <-h.done:
			returned = true
		default:
		}
		return returned
	})
	if err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestStopGraceCoversEveryLane holds the stop grace to every lane with a
// job in flight, not only the first: with two printers stuck mid-job, Run
// returns once the one grace has passed. Before, the grace timer fired for
// the first lane only and the stop then waited on the second lane's job
// until its job timeout (here ten hours).
func TestStopGraceCoversEveryLane(t *testing.T) {
	var mu sync.Mutex
	stuck := map[string]*stuckPrinter{}
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}, {name: "b", model: printertest.ModelEpson}}, "", func(o *Options) {
		o.StopGrace = time.Hour
		o.JobTimeout = 10 * time.Hour
		open := o.OpenPrinter
		o.OpenPrinter = func(pc *config.Printer) Printer {
			p := &stuckPrinter{Printer: open(pc), started: make(chan struct{})}
			mu.Lock()
			stuck[pc.Name] = p
			mu.Unlock()
			return p
		}
	})
	h.submit("G1_v1", "k")
	h.submit("G2_v1", "b")
	mu.Lock()
	k, b := stuck["k"], stuck["b"]
	mu.Unlock()
	<-k.started
	<-b.started
	stopOnAgentClock(t, h, "Run returned after one stop grace with two jobs in flight")
}
