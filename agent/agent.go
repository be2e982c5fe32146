package agent

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"printgate/agent/config"
	"printgate/agent/metrics"
	"printgate/agent/wheel"
	"printgate/drivers/escpos"
	"printgate/internal/backoff"
	"printgate/spool"
)

// Agent runs the lanes of every configured printer over one spool. Create it
// with New, start it with Run; its methods implement the local API's
// backend (localapi.Backend; the page's is agent/daemon's, which embeds it).
type Agent struct {
	cfg   *config.Config
	spool *spool.Spool
	opts  Options
	log   *slog.Logger
	m     *metrics.Metrics

	// reclaimMu guards reclaimSeen and reclaimLogged: the spool's count of
	// bodies dropped early that the log has told of, and when it last did.
	reclaimMu     sync.Mutex
	reclaimSeen   int64
	reclaimLogged time.Time

	// compactMu guards what the last compaction left: why it failed (""
	// after one succeeds), and when the next may start (retention.go).
	compactMu      sync.Mutex
	compactErr     string
	compactRetryAt time.Time
	compactBackoff time.Duration

	// lanesMu guards lanes and order, which a reload replaces whole (copy
	// on write): readers take a snapshot through lane and laneList.
	lanesMu sync.RWMutex
	lanes   map[string]*lane
	order   []string // lane names in config order
	// open builds a lane's device (Options.OpenPrinter or the default).
	open func(pc *config.Printer) Printer
	// wg owns every goroutine Run starts, lanes added by a reload included.
	wg sync.WaitGroup
	// reloadMu serialises reloads with each other and with Run's stop;
	// quit is closed when Run starts stopping, after which reloads refuse.
	reloadMu sync.Mutex
	quit     chan struct{}
	// live is the config whose printers run now (the last reload's, or
	// cfg); cfg stays the one the process started with, whose other
	// settings apply until a restart.
	live atomic.Pointer[config.Config]

	// push times retries, failover and failback checks; deadlines holds one
	// absolute deadline per task.
	push      *wheel.Scheduler[pushKey, pushItem]
	deadlines *wheel.Scheduler[string, struct{}]

	randMu sync.Mutex
	rand   *rand.Rand

	ownerMu sync.Mutex
	owner   map[string]string // task_no → lane currently holding it (owner.go)

	// retryMu serialises the retries of finished tasks (page.go), so two
	// clicks never both find no earlier retry and both print.
	retryMu sync.Mutex

	started chan struct{} // closed once restore has handed every lane its backlog
	ctx     context.Context
	// stopCore ends the core's goroutines; fail calls it.
	stopCore context.CancelFunc
	failMu   sync.Mutex
	failed   error // why the core stopped, if it did

	outboxDropped int    // last outbox loss reported, owned by gauges
	spoolFull     bool   // last nearly-full state reported, owned by gauges
	doorsShown    string // last doors problem reported, owned by gauges
	strainShown   string // last spool strain reported (strainState), owned by gauges

	// doors holds the intake doors' rates and quota state (doors.go).
	doors *doors

	// link is the cloud link once AttachLink (link.go); nil without one.
	link atomic.Pointer[linkRef]
	// pairing runs the device flow the pairing page shows.
	pairing pairing
	// raw holds the raw ports (raw.go), open once serving.
	raw rawPorts
}

var (
	_ laneHost = (*Agent)(nil)
)

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
		quit:    make(chan struct{}),
	}
	a.opts.Observe = a.observeWith(opts.Observe)
	a.doors = newDoors(cfg.Spool, opts.Clock, opts.Logger)
	a.live.Store(cfg)
	a.push = wheel.NewScheduler[pushKey, pushItem](opts.Clock, 0)
	a.deadlines = wheel.NewScheduler[string, struct{}](opts.Clock, 0)
	open := opts.OpenPrinter
	if open == nil {
		open = func(pc *config.Printer) Printer {
			return openDevice(pc, escpos.SessionOptions{}, a.reportDowngrade(pc.Name), opts.Clock.Now)
		}
	}
	a.open = open
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
	// Pairing flows live as long as Run; stop and wait for them last.
	a.pairing.begin(a, runCtx)
	defer a.pairing.end()
	_, lanes := a.laneList()
	for _, l := range lanes {
		a.startLane(runCtx, l)
	}
	wg := &a.wg
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
		a.deadlines.Run(runCtx, a.onDeadline)
	}()
	if err := a.safeRestore(runCtx); err != nil {
		a.fail(err)
	} else if runCtx.Err() == nil {
		close(a.started)
		a.log.Info("agent running", "printers", len(a.laneNames()))
	}

	select {
	case <-ctx.Done():
	case <-runCtx.Done():
	}
	// No reload from here on: a running one sees quit and gives up, and
	// the lanes below are all there will be.
	close(a.quit)
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	names, lanes := a.laneList()
	if runCtx.Err() != nil {
		// The core failed: stop at once, there is nothing to wait for.
		wg.Wait()
		a.closeDevices(lanes)
		return a.Failed()
	}
	a.log.Info("agent stopping: intake closed, waiting for jobs in flight", "grace", a.opts.StopGrace)
	for _, l := range lanes {
		l.post(msgStop{})
	}
	// On the agent's clock, as every timer that decides what the agent
	// does (Options.Clock).
	grace := a.opts.Clock.NewTimer(a.opts.StopGrace)
	defer grace.Stop()
	// One grace for all lanes: once it has run out (it fires once), the
	// lanes still busy are named and cut off together, not waited on.
	expired := false
	for i, l := range lanes {
		if expired {
			select {
			case <-l.idle:
			default:
				a.log.Warn("stop grace ran out with a job in flight; it will be treated as outcome unknown at next start", "printer", names[i])
			}
			continue
		}
		select {
		case <-l.idle:
		case <-grace.C():
			expired = true
			a.log.Warn("stop grace ran out with a job in flight; it will be treated as outcome unknown at next start", "printer", names[i])
		case <-runCtx.Done():
		}
	}
	cancel()
	wg.Wait()
	a.closeDevices(lanes)
	return a.Failed()
}

// startLane runs l's inbox and status monitor under ctx, owned by a.wg;
// l.stop ends them alone when a reload retires the lane.
func (a *Agent) startLane(ctx context.Context, l *lane) {
	lctx, cancel := context.WithCancel(ctx)
	l.stopRun = cancel
	a.wg.Add(2)
	l.wg.Add(2)
	go func() { defer a.wg.Done(); defer l.wg.Done(); l.run(lctx) }()
	go func() { defer a.wg.Done(); defer l.wg.Done(); l.monitor(lctx) }()
}

// lane returns the running lane called name, or nil.
func (a *Agent) lane(name string) *lane {
	a.lanesMu.RLock()
	defer a.lanesMu.RUnlock()
	return a.lanes[name]
}

// laneList returns the lanes in config order, as of now.
func (a *Agent) laneList() ([]string, []*lane) {
	a.lanesMu.RLock()
	defer a.lanesMu.RUnlock()
	out := make([]*lane, len(a.order))
	for i, name := range a.order {
		out[i] = a.lanes[name]
	}
	return append([]string(nil), a.order...), out
}

// laneNames lists the configured printers, for error messages.
func (a *Agent) laneNames() []string {
	names, _ := a.laneList()
	return names
}

// closeDevices lets go of every printer connection once no lane uses them,
// so the printers are free for other software and nothing leaks.
func (a *Agent) closeDevices(lanes []*lane) {
	for _, l := range lanes {
		l.closeDevice()
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
// (docs/DESIGN.md, invariant 1).
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
		a.observe(Event{Health: true})
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

func (a *Agent) jitter(b backoff.Backoff, attempt int) time.Duration {
	a.randMu.Lock()
	defer a.randMu.Unlock()
	b.Rand = a.rand
	return b.Delay(attempt)
}

// jobContext is the context print jobs run under; it ends with the core.
func (a *Agent) jobContext() context.Context { return a.ctx }
