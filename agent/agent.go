package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"printgate/agent/config"
	"printgate/agent/localapi"
	"printgate/agent/metrics"
	"printgate/agent/wheel"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// Printer is what a lane needs from a physical printer. *escpos.Device
// implements it over any transport.
type Printer interface {
	// Status asks the printer how it is.
	Status(ctx context.Context) (escpos.Status, error)
	// Print sends one job and returns how strongly its completion was
	// confirmed, or a *escpos.PrintError saying what went wrong and whether
	// any job byte left.
	Print(ctx context.Context, job []byte, id uint64) (escpos.Confirmation, error)
}

// idleCloser is implemented by printers that hold a connection open and can
// let it go when no work flows, so other software can reach the printer.
type idleCloser interface {
	CloseIfIdle(now time.Time) bool
}

// Options are the agent's collaborators; zero fields get working defaults.
type Options struct {
	// Clock drives every timer: monitors, retries, deadlines, failover.
	// Tests pass a *wheel.FakeClock. Default: the real clock.
	Clock wheel.Clock
	// Logger receives structured logs. Default: slog.Default().
	Logger *slog.Logger
	// Metrics records what the agent does. Default: a private registry.
	Metrics *metrics.Metrics
	// OpenPrinter builds the Printer for a configured printer. Default:
	// an escpos.Device over drivers.Open that reports a weakened completion
	// proof (log and metric).
	OpenPrinter func(pc *config.Printer) Printer
	// Rand seeds retry jitter. Default: a random seed.
	Rand *rand.Rand
	// PollIdle and PollBusy are the status monitor's intervals while a
	// printer is idle and while work waits for it. Defaults 5s and 500ms.
	PollIdle, PollBusy time.Duration
	// AgeAfter is how long a normal task waits before it counts as urgent.
	// Default 30s.
	AgeAfter time.Duration
	// JobTimeout, if set, overrides every printer's job_timeout (the
	// bound on one Print call: write plus completion barrier), for tests.
	JobTimeout time.Duration
	// StopGrace bounds how long Run waits, after its context ends, for jobs
	// in flight to finish their completion barrier. Default 10s.
	StopGrace time.Duration
	// Link reports the cloud link's state for /healthz; nil means "disabled".
	Link func() string
	// Observe, if set, is called after every task transition the agent makes
	// and every printer state change, from the lane's goroutine. It must not
	// block. Tests wait on it instead of sleeping; the cloud link and the
	// manager page's live view can use it too.
	Observe func(Event)
}

// Event is what Options.Observe is told.
type Event struct {
	Printer string      // the lane where it happened
	Task    *spool.Task // the task after a transition, or nil
	State   string      // the printer state after a state change, when Task is nil
	// Switch marks a failover (FailoverTo is the backup) or a failback
	// (FailoverTo is empty) of Printer.
	Switch     bool
	FailoverTo string
	// Err reports that the spool could not record Task's next state (disk
	// full, I/O error); the lane keeps the task and tries again shortly.
	Err error
}

func (o *Options) fill() {
	if o.Clock == nil {
		o.Clock = wheel.RealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.PollIdle <= 0 {
		o.PollIdle = 5 * time.Second
	}
	if o.PollBusy <= 0 {
		o.PollBusy = 500 * time.Millisecond
	}
	if o.AgeAfter <= 0 {
		o.AgeAfter = 30 * time.Second
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 10 * time.Second
	}
}

// Agent runs the lanes of every configured printer over one spool. Create it
// with New, start it with Run; its methods implement localapi.Backend.
type Agent struct {
	cfg   *config.Config
	spool *spool.Spool
	opts  Options
	log   *slog.Logger
	m     *metrics.Metrics

	lanes map[string]*lane
	order []string // lane names in config order

	// push times retries, failover and failback checks; deadlines holds one
	// absolute deadline per task.
	push      *wheel.Scheduler[string, pushItem]
	deadlines *wheel.Scheduler[string, struct{}]

	randMu sync.Mutex
	rand   *rand.Rand

	ownerMu sync.Mutex
	owner   map[string]string // task_no → lane currently holding it

	started chan struct{} // closed once restore has handed every lane its backlog
	ctx     context.Context
	// stopCore ends the core's goroutines; fail calls it.
	stopCore context.CancelFunc
	failMu   sync.Mutex
	failed   error // why the core stopped, if it did

	outboxDropped int // last outbox loss reported, owned by gauges
}

var _ localapi.Backend = (*Agent)(nil)

// New builds an agent for cfg over an open spool. Nothing runs until Run.
func New(cfg *config.Config, sp *spool.Spool, opts Options) (*Agent, error) {
	opts.fill()
	a := &Agent{
		cfg:     cfg,
		spool:   sp,
		opts:    opts,
		log:     opts.Logger,
		m:       opts.Metrics,
		lanes:   map[string]*lane{},
		rand:    opts.Rand,
		owner:   map[string]string{},
		started: make(chan struct{}),
	}
	a.push = wheel.NewScheduler[string, pushItem](opts.Clock, 0)
	a.deadlines = wheel.NewScheduler[string, struct{}](opts.Clock, 0)
	open := opts.OpenPrinter
	if open == nil {
		open = func(pc *config.Printer) Printer {
			return openDevice(pc, escpos.SessionOptions{}, a.reportDowngrade(pc.Name), opts.Clock.Now)
		}
	}
	for i := range cfg.Printers {
		pc := &cfg.Printers[i]
		l, err := newLane(a, pc, open(pc))
		if err != nil {
			return nil, err
		}
		a.lanes[pc.Name] = l
		a.order = append(a.order, pc.Name)
	}
	return a, nil
}

// Run starts every lane and timer, rebuilds the lanes from the spool, then
// runs until ctx ends. The lanes and their status monitors start first and
// restore streams each lane's backlog to it a page at a time, so the first
// ticket prints while a large backlog still loads. Ready is closed once the
// whole backlog is handed over: only then may intake take new tasks.
//
// On the way out it stops starting jobs, lets jobs in flight finish their
// completion barrier (bounded by StopGrace) and returns nil. If the core
// fails instead (restore cannot read the spool, a lane panics), Run returns
// the cause at once and Failed reports it; intake must answer 503 from then
// on. The caller closes the spool afterwards.
func (a *Agent) Run(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.ctx = runCtx
	a.failMu.Lock()
	a.stopCore = cancel
	a.failMu.Unlock()
	var wg sync.WaitGroup
	for _, name := range a.order {
		l := a.lanes[name]
		wg.Add(2)
		go func() { defer wg.Done(); l.run(runCtx) }()
		go func() { defer wg.Done(); l.monitor(runCtx) }()
	}
	wg.Add(3)
	go func() {
		defer wg.Done()
		a.push.Run(runCtx, a.onPush)
	}()
	go func() {
		defer wg.Done()
		a.gauges(runCtx)
	}()
	go func() {
		defer wg.Done()
		a.deadlines.Run(runCtx, func(taskNo string, _ struct{}) { a.toOwner(taskNo, msgDeadline{taskNo: taskNo}) })
	}()
	if err := a.safeRestore(runCtx); err != nil {
		a.fail(err)
	} else if runCtx.Err() == nil {
		close(a.started)
		a.log.Info("agent running", "printers", len(a.order))
	}

	select {
	case <-ctx.Done():
	case <-runCtx.Done():
		// The core failed: stop at once, there is nothing to wait for.
		wg.Wait()
		a.closeDevices()
		return a.Failed()
	}
	a.log.Info("agent stopping: intake closed, waiting for jobs in flight", "grace", a.opts.StopGrace)
	for _, name := range a.order {
		a.lanes[name].post(msgStop{})
	}
	grace := time.NewTimer(a.opts.StopGrace)
	defer grace.Stop()
	for _, name := range a.order {
		select {
		case <-a.lanes[name].idle:
		case <-grace.C:
			a.log.Warn("stop grace ran out with a job in flight; it will be treated as outcome unknown at next start", "printer", name)
		case <-runCtx.Done():
		}
	}
	cancel()
	wg.Wait()
	a.closeDevices()
	return a.Failed()
}

// closeDevices lets go of every printer connection once no lane uses them,
// so the printers are free for other software and nothing leaks.
func (a *Agent) closeDevices() {
	for _, name := range a.order {
		if c, ok := a.lanes[name].dev.(io.Closer); ok {
			if err := c.Close(); err != nil {
				a.log.Warn("closing printer connection", "printer", name, "err", err)
			}
		}
	}
}

// safeRestore is restore with a panic (a spool damaged in a way the
// checks at open did not catch) turned into an error.
func (a *Agent) safeRestore(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("restore panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return a.restore(ctx)
}

// Ready is closed once the agent has restored every lane from the spool and
// may take new tasks. The local API must not serve intake before it
// (DESIGN.md "Invariants" 1).
func (a *Agent) Ready() <-chan struct{} { return a.started }

// Failed returns why the core stopped, or nil while it runs (or after a
// clean stop).
func (a *Agent) Failed() error {
	a.failMu.Lock()
	defer a.failMu.Unlock()
	return a.failed
}

// fail stops the core for good: the first cause is kept, logged at ERROR,
// and every later Submit is refused so no task is accepted that no lane
// would print.
func (a *Agent) fail(err error) {
	a.failMu.Lock()
	first := a.failed == nil
	if first {
		a.failed = fmt.Errorf("agent core stopped: %w", err)
	}
	stop := a.stopCore
	a.failMu.Unlock()
	if first {
		a.log.Error("AGENT CORE STOPPED: no task will print; intake refuses new tasks", "err", err)
	}
	if stop != nil {
		stop()
	}
}

// recoverCore turns a panic in one of the core's goroutines into a core
// failure; deferred at the top of each.
func (a *Agent) recoverCore(where string) {
	if r := recover(); r != nil {
		a.fail(fmt.Errorf("%s panicked: %v\n%s", where, r, debug.Stack()))
	}
}

// gauges refreshes the metrics that are read from the spool rather than
// counted as they happen: tasks by state and the outbox depth.
func (a *Agent) gauges(ctx context.Context) {
	for {
		if counts, err := a.spool.Counts(); err == nil {
			a.m.SetTaskCounts(counts)
		}
		a.reportIntegrity()
		t := a.opts.Clock.NewTimer(5 * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// pushItem is what the push wheel carries.
type pushItem struct {
	lane string
	msg  laneMsg
}

func (a *Agent) onPush(_ string, it pushItem) {
	if l := a.lanes[it.lane]; l != nil {
		l.post(it.msg)
	}
}

// after schedules msg for lane after d on the push wheel under key.
func (a *Agent) after(key string, d time.Duration, lane string, msg laneMsg) {
	a.push.After(key, d, pushItem{lane: lane, msg: msg})
}

func (a *Agent) jitter(b wheel.Backoff, attempt int) time.Duration {
	a.randMu.Lock()
	defer a.randMu.Unlock()
	b.Rand = a.rand
	return b.Delay(attempt)
}

func (a *Agent) setOwner(taskNo, lane string) {
	a.ownerMu.Lock()
	a.owner[taskNo] = lane
	a.ownerMu.Unlock()
}

func (a *Agent) dropOwner(taskNo string) {
	a.ownerMu.Lock()
	delete(a.owner, taskNo)
	a.ownerMu.Unlock()
}

// toOwner posts msg to the lane holding taskNo, if any lane does.
func (a *Agent) toOwner(taskNo string, msg laneMsg) bool {
	a.ownerMu.Lock()
	name, ok := a.owner[taskNo]
	a.ownerMu.Unlock()
	if !ok {
		return false
	}
	a.lanes[name].post(msg)
	return true
}

// scheduleDeadline arms the task's one absolute deadline. Deadlines are
// stored as wall times so they survive a restart; the remaining time is
// measured against the agent's clock.
func (a *Agent) scheduleDeadline(t *spool.Task) {
	a.deadlines.After(t.TaskNo, t.Deadline.Sub(a.opts.Clock.Now()), struct{}{})
}

// Submit accepts a task into the spool and hands it to its printer's lane.
// It returns once the task is fsync'd; printing happens afterwards.
func (a *Agent) Submit(ctx context.Context, nt spool.NewTask) (*spool.Task, bool, error) {
	if a.Failed() != nil {
		return nil, false, fmt.Errorf("%w: its core has stopped on a failure (see the agent's log)", localapi.ErrUnavailable)
	}
	select {
	case <-a.started:
	default:
		return nil, false, fmt.Errorf("%w: the agent is still restoring its spool", localapi.ErrUnavailable)
	}
	if _, ok := a.lanes[nt.Printer]; !ok {
		return nil, false, fmt.Errorf("%w: %q (configured: %v)", localapi.ErrUnknownPrinter, nt.Printer, a.order)
	}
	pc, _ := a.cfg.Printer(nt.Printer)
	if len(nt.Document) > 0 {
		doc, err := escpos.ParseDocument(nt.Document)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %v", localapi.ErrBadDocument, err)
		}
		if err := escpos.CheckDocument(doc, pc.Profile); err != nil {
			// A resend of a task accepted before the printer's profile
			// changed is still answered as the duplicate it is.
			if t, gerr := a.spool.Get(nt.TaskNo); gerr == nil {
				return t, true, nil
			}
			return nil, false, fmt.Errorf("%w: %v", localapi.ErrBadDocument, err)
		}
	}
	if nt.Timeout == 0 {
		nt.Timeout = pc.Timeout
	}
	t, dup, err := a.spool.Accept(nt)
	if err != nil {
		return nil, false, err
	}
	a.m.IncAccepted(string(t.Origin), dup)
	if dup {
		return t, true, nil
	}
	a.log.Info("task accepted", "task_no", t.TaskNo, "printer", t.Printer, "state", t.State, "origin", t.Origin, "seq", t.Seq, "size", t.Size)
	a.setOwner(t.TaskNo, t.Printer)
	a.lanes[t.Printer].post(msgTask{task: t})
	// After the post: a deadline already due must reach the lane after the
	// task does.
	a.scheduleDeadline(t)
	if a.Failed() != nil {
		// The core stopped while this task was being written: it is on
		// disk and prints at the next start, but nobody prints it now.
		return nil, false, fmt.Errorf("%w: its core stopped while task %s was being accepted; the task is spooled and prints after a restart", localapi.ErrUnavailable, t.TaskNo)
	}
	return t, false, nil
}

// Task returns a task by task_no.
func (a *Agent) Task(taskNo string) (*spool.Task, error) { return a.spool.Get(taskNo) }

// Tasks lists tasks a page at a time.
func (a *Agent) Tasks(o spool.ListOptions) (spool.Page, error) { return a.spool.List(o) }

// Cancel cancels a task that has not started printing. A task being sent or
// already finished cannot be canceled (localapi.ErrConflict).
func (a *Agent) Cancel(ctx context.Context, taskNo string) (*spool.Task, error) {
	t, err := a.spool.Get(taskNo)
	if err != nil {
		return nil, err
	}
	if t.State.Terminal() || t.State == spool.StateSending {
		return nil, fmt.Errorf("%w: task %s is %s", localapi.ErrConflict, taskNo, t.State)
	}
	reply := make(chan cancelResult, 1)
	if !a.toOwner(taskNo, msgCancel{taskNo: taskNo, reply: reply}) {
		return nil, fmt.Errorf("%w: task %s is not held by any lane", localapi.ErrConflict, taskNo)
	}
	select {
	case r := <-reply:
		return r.task, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var versionSuffix = regexp.MustCompile(`^(.*)_v([0-9]+)$`)

// nextVersion returns the task_no of the next reprint version of taskNo:
// _vN becomes _vN+1, anything else gets _v2.
func nextVersion(taskNo string) string {
	if m := versionSuffix.FindStringSubmatch(taskNo); m != nil {
		n, err := strconv.Atoi(m[2])
		if err == nil {
			return fmt.Sprintf("%s_v%d", m[1], n+1)
		}
	}
	return taskNo + "_v2"
}

// Reprint prints a task again as a new version (_vN → _vN+1) marked REPRINT
// and linked by reprint_of. If that version exists already, the next free one
// is used, so each reprint request prints exactly one more copy.
func (a *Agent) Reprint(ctx context.Context, taskNo string) (*spool.Task, error) {
	orig, err := a.spool.Get(taskNo)
	if err != nil {
		return nil, err
	}
	if orig.Pruned {
		return nil, fmt.Errorf("reprint %s: %w", taskNo, spool.ErrPruned)
	}
	next := taskNo
	for i := 0; i < 100; i++ {
		next = nextVersion(next)
		nt := spool.NewTask{
			TaskNo: next, Printer: orig.Printer, Priority: spool.PriorityUrgent, Origin: spool.OriginManager,
			Payload: orig.Payload, Document: orig.Document, ReprintOf: taskNo,
		}
		t, dup, err := a.Submit(ctx, nt)
		if err != nil {
			return nil, fmt.Errorf("reprint %s as %s: %w", taskNo, next, err)
		}
		if !dup {
			return t, nil
		}
	}
	return nil, fmt.Errorf("reprint %s: 100 versions already exist", taskNo)
}

// Refresh asks printer's monitor to read its status now instead of at the
// next poll, for example after someone put paper in.
func (a *Agent) Refresh(printer string) bool {
	l, ok := a.lanes[printer]
	if ok {
		select {
		case l.pollNow <- struct{}{}:
		default:
		}
	}
	return ok
}

// Printers reports each printer's state and queue for the API and the page.
func (a *Agent) Printers() []localapi.PrinterInfo {
	out := make([]localapi.PrinterInfo, 0, len(a.order))
	for _, name := range a.order {
		out = append(out, a.lanes[name].info())
	}
	return out
}

// Health reports the agent's overall state for /healthz.
func (a *Agent) Health() localapi.Health {
	h := localapi.Health{Status: "ok", Link: "disabled"}
	if a.opts.Link != nil {
		h.Link = a.opts.Link()
	}
	if err := a.Failed(); err != nil {
		h.Status, h.Error = "failed", firstLine(err.Error())
		return h
	}
	if st, err := a.spool.OutboxStats(); err == nil {
		h.Outbox, h.OutboxDropped = st.Depth, st.Dropped
	} else {
		h.Status, h.Error = "degraded", "the spool cannot be read: "+err.Error()
	}
	var ce *spool.CorruptError
	if errors.As(a.spool.Recovered(), &ce) {
		h.Status = "degraded"
		h.SpoolQuarantined, h.UnreadableRecords = ce.MovedTo, ce.Unreadable
		h.Error = fmt.Sprintf("the spool file was corrupt and was moved to %s; %d tasks were salvaged, %d records could not be read", ce.MovedTo, ce.Salvaged, ce.Unreadable)
	}
	return h
}

// reportIntegrity publishes what the spool knows of lost work, at start and
// with the gauges: salvage counts, and outbox events the cap dropped (with
// an ERROR line each time that number grows).
func (a *Agent) reportIntegrity() {
	var ce *spool.CorruptError
	if errors.As(a.spool.Recovered(), &ce) {
		a.m.SetUnreadableRecords(ce.Unreadable)
	}
	st, err := a.spool.OutboxStats()
	if err != nil {
		return
	}
	a.m.SetOutboxDepth(st.Depth)
	a.m.SetOutboxLoss(st.Dropped, st.Compacted)
	if st.Dropped > a.outboxDropped {
		a.log.Error("OUTBOX FULL: events the cloud never acknowledged were dropped; the cloud lacks part of those tasks' history",
			"dropped_total", st.Dropped, "new", st.Dropped-a.outboxDropped, "compacted_total", st.Compacted, "depth", st.Depth)
		a.outboxDropped = st.Dropped
	}
}

// render builds the job bytes for t as printed on lane l: the document
// rendered for l's profile, or the raw payload, with the banners the task's
// history calls for.
func render(t *spool.Task, l *lane) ([]byte, error) {
	opts := escpos.RenderOptions{PossibleDuplicate: t.PossibleDuplicate, Reprint: t.ReprintOf != ""}
	if t.Lane() != t.Printer {
		opts.FailoverFrom, opts.FailoverTo = t.Printer, t.Lane()
	}
	if len(t.Document) > 0 {
		doc, err := escpos.ParseDocument(t.Document)
		if err != nil {
			return nil, err
		}
		return escpos.Render(doc, l.pc.Profile, opts)
	}
	if !opts.PossibleDuplicate && !opts.Reprint && opts.FailoverFrom == "" {
		return t.Payload, nil
	}
	banner, err := escpos.RenderBanner(l.pc.Profile, opts)
	if err != nil {
		return nil, err
	}
	return append(banner, t.Payload...), nil
}

// firstLine is s up to its first newline: a panic's cause without its stack.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
