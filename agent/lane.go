package agent

// The lane: its messages, its state, its inbox loop and what it shows.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/agent/metrics"
	"printgate/drivers/escpos"
	"printgate/internal/backoff"
	"printgate/internal/clock"
	"printgate/spool"
)

// laneMsg is anything posted to a lane's inbox.
type laneMsg any

type (
	// msgTask hands the lane a task: newly accepted or moved here by
	// failover.
	msgTask struct{ task *spool.Task }
	// msgRestore hands the lane one page of its backlog read from the spool
	// at start; the lane closes ack once it has taken the page, so the
	// restorer reads the next page only then and memory stays bounded.
	msgRestore struct {
		tasks []*spool.Task
		ack   chan struct{}
	}
	// msgStatus is the monitor's latest reading of the printer.
	msgStatus struct {
		state escpos.PrinterState
		err   error
	}
	// msgRedo asks the lane to act again on a task it holds aside: a retry
	// that is due, or a spool write that failed and is tried again.
	msgRedo     struct{ taskNo string }
	msgDeadline struct{ taskNo string }
	msgFailover struct{}
	msgFailback struct{}
	msgWake     struct{}
	msgStop     struct{}
	// msgRestored follows the last page of a restore a reload started:
	// messages about tasks the lane did not hold yet, held back meanwhile,
	// are handled now.
	msgRestored struct{}
	// msgBarrier is answered at the end of the inbox round that takes it,
	// after dispatch: whatever the lane was going to start, it has.
	msgBarrier struct{ reply chan laneIdle }
	msgCancel  struct {
		taskNo string
		reply  chan cancelResult
	}
	msgJobDone struct {
		e    *entry
		conf escpos.Confirmation
		err  error
	}
	// msgRetry is a manager's retry of a HELD task (Agent.Retry): queue it
	// again on printer ("" = where it is).
	msgRetry struct {
		taskNo, printer string
		reply           chan retryResult
	}
)

type retryResult struct {
	task *spool.Task
	err  error
}

// laneIdle is a lane's answer to a barrier.
type laneIdle struct {
	inflight bool // a job is being printed
	queued   int  // tasks waiting to print
}

type cancelResult struct {
	task *spool.Task
	err  error
}

// laneHost is what a lane needs of the agent that runs it, and nothing
// more: the lane owns its tasks, and reaches the rest of the agent only to
// set timers, hand a task to another lane, tell observers, and report a
// deadline or a panic it cannot handle itself. *Agent implements it.
type laneHost interface {
	// after schedules msg for lane after d under key; cancelTimer disarms
	// key (timers.go).
	after(key pushKey, d time.Duration, lane string, msg laneMsg)
	cancelTimer(key pushKey)
	// jitter is b's delay before retry attempt, from the agent's shared
	// random source.
	jitter(b backoff.Backoff, attempt int) time.Duration
	// handTo makes t's lane (t.Lane()) its owner and gives it t; false
	// when no such lane runs (a reload removed it).
	handTo(t *spool.Task) bool
	// taskEnded forgets a task that reached a terminal state: no owner,
	// no deadline.
	taskEnded(taskNo string)
	// deadlineMissed takes a deadline that reached lane from, which does
	// not hold the task; deadlineAgain delivers taskNo's deadline again
	// after d (deadline.go).
	deadlineMissed(taskNo, from string)
	deadlineAgain(taskNo string, d time.Duration)
	// observe tells Options.Observe and the page's live view.
	observe(e Event)
	// recoverCore turns a panic of the calling goroutine into a core
	// failure (deferred).
	recoverCore(where string)
	// jobContext is the context print jobs run under: it ends when the
	// core stops.
	jobContext() context.Context
}

// lane prints the tasks of one physical printer strictly one at a time. All
// fields below the inbox are owned by the run goroutine.
type lane struct {
	host    laneHost
	sp      *spool.Spool
	m       *metrics.Metrics
	clock   clock.Clock
	pc      *config.Printer
	name    string
	dev     Printer
	backoff backoff.Backoff
	log     *slog.Logger
	// From the agent's options and start-up config, which a reload does
	// not change: see Options.
	jobTimeoutAll      time.Duration // Options.JobTimeout: overrides job_timeout
	pollIdle, pollBusy time.Duration
	ageAfter           time.Duration
	maxAttempts        int // defaults.max_attempts

	inboxMu  sync.Mutex
	inbox    []laneMsg
	signal   chan struct{}
	pollNow  chan struct{}
	jobEnded chan struct{} // tells the monitor a job ended
	idle     chan struct{} // closed once stopping with no job in flight

	// Shared with the monitor and readers of info().
	hasWork  atomic.Bool
	ready    atomic.Bool
	printing atomic.Bool
	infoMu   sync.Mutex
	snap     api.PrinterInfo
	lastTask string    // the last task this printer put on paper
	lastAt   time.Time // and when
	lastRead bool      // the spool was asked for lastTask once (lastPrinted)

	// held indexes every task the lane holds, wherever it is: a task
	// delivered twice is taken once. Agent.owner records the same from
	// the router's side (owner.go says why there are two).
	held     map[string]*entry
	queue    taskQueue         // QUEUED (and ACCEPTED ones whose QUEUED write failed)
	parked   seqHeap           // PARKED, by seq
	waiting  map[string]*entry // RETRY_WAIT, HELD, and tasks whose next write is retried
	inflight *entry
	// toQueue and toPark collect accepted tasks until the end of the inbox
	// round, to be recorded in one transaction each; expiring collects
	// deadlines the same way.
	toQueue, toPark, expiring []*entry

	state      escpos.PrinterState // "" until the first reading
	stateErr   error               // what explained the last not-ready reading
	stateSince time.Time
	failures   int       // failed attempts in a row
	confirms   uint64    // copies confirmed since the lane started (resets max_unknown's count)
	failedOver string    // backup receiving this printer's work, if failed over
	retryFwd   bool      // a forward to the backup failed; try again on wake
	started    time.Time // when the lane started, on the agent's clock
	expiryWake bool      // a wake is set for deadlines held until the first reading
	stopping   bool
	idleClosed bool
	moveErr    error // the last move's error, to tell refusal from trouble
	barriers   []chan laneIdle
	// printedDue is a job that printed and whose PRINTED is not yet
	// recorded: it rides on the next job's SENDING commit.
	printedDue *msgJobDone
	// restoring is set on a lane a reload started until its backlog is
	// restored (msgRestored): deadlines, cancels and retries for tasks it
	// does not hold yet wait in deferred instead of missing them.
	restoring bool
	deferred  []laneMsg

	// stopRun and wg stop the lane's goroutines on their own, when a reload
	// retires it (set by Agent.startLane).
	stopRun context.CancelFunc
	wg      sync.WaitGroup
}

func newLane(a *Agent, pc *config.Printer, dev Printer) (*lane, error) {
	d := a.cfg.Defaults
	b := backoff.Backoff{Base: d.RetryBase, Factor: d.RetryFactor, Cap: d.RetryCap, Jitter: d.RetryJitter}
	if b.Factor == 0 {
		b.Factor = 2
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("printer %s: retry policy: %w", pc.Name, err)
	}
	l := &lane{
		host: a, sp: a.spool, m: a.m, clock: a.opts.Clock,
		pc: pc, name: pc.Name, dev: dev, backoff: b,
		jobTimeoutAll: a.opts.JobTimeout, pollIdle: a.opts.PollIdle, pollBusy: a.opts.PollBusy,
		ageAfter: a.opts.AgeAfter, maxAttempts: d.MaxAttempts,
		log:      a.log.With("printer", pc.Name),
		signal:   make(chan struct{}, 1),
		pollNow:  make(chan struct{}, 1),
		jobEnded: make(chan struct{}, 1),
		idle:     make(chan struct{}),
		held:     map[string]*entry{},
		waiting:  map[string]*entry{},
	}
	l.snap = api.PrinterInfo{Name: pc.Name, URL: pc.URL, State: "UNKNOWN"}
	return l, nil
}

// post queues msg for the lane; it never blocks.
func (l *lane) post(msg laneMsg) {
	l.inboxMu.Lock()
	l.inbox = append(l.inbox, msg)
	l.inboxMu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

func (l *lane) take() []laneMsg {
	l.inboxMu.Lock()
	defer l.inboxMu.Unlock()
	msgs := l.inbox
	l.inbox = nil
	return msgs
}

// run is the lane's goroutine. A panic here stops the agent's core (see
// Agent.fail) instead of leaving a lane that silently prints nothing.
func (l *lane) run(ctx context.Context) {
	defer l.host.recoverCore("lane " + l.name)
	l.started = l.now()
	for {
		select {
		case <-l.signal:
		case <-ctx.Done():
			return
		}
		for _, msg := range l.take() {
			l.handle(msg)
		}
		l.flush()
		l.dispatch()
		l.flushPrinted()
		l.publish()
		for _, r := range l.barriers {
			r <- laneIdle{inflight: l.inflight != nil, queued: l.queue.len() + l.parked.Len()}
		}
		l.barriers = nil
		if l.stopping && l.inflight == nil && !l.idleClosed {
			l.idleClosed = true
			close(l.idle)
		}
	}
}

func (l *lane) handle(msg laneMsg) {
	if l.restoring && l.waitsForRestore(msg) {
		l.deferred = append(l.deferred, msg)
		return
	}
	switch m := msg.(type) {
	case msgRestored:
		l.restoring = false
		d := l.deferred
		l.deferred = nil
		for _, m := range d {
			l.handle(m)
		}
	case msgTask:
		l.receive(m.task)
	case msgRestore:
		for _, t := range m.tasks {
			if t.State == spool.StateAccepted && l.state != escpos.StateOffline && l.failedOver == "" {
				// A backlog left ACCEPTED by a crash: it goes ACCEPTED →
				// QUEUED → SENDING when it starts, not through a rewrite of
				// every page first.
				if _, dup := l.held[t.TaskNo]; !dup {
					e := &entry{task: lite(t)}
					l.held[t.TaskNo] = e
					l.queue.push(e)
				}
				continue
			}
			l.receive(t)
		}
		close(m.ack)
	case msgStatus:
		if m.state == "" {
			// The monitor could not tell (a link flap): stop pushing until
			// its next reading, without asking it to look again at once.
			l.stateErr = m.err
			if l.state == escpos.StateReady {
				l.setState(escpos.StateBusy, m.err)
			}
			break
		}
		l.setState(m.state, m.err)
	case msgJobDone:
		l.jobDone(m)
	case msgRedo:
		if e, ok := l.waiting[m.taskNo]; ok {
			l.redo(e)
		}
	case msgDeadline:
		l.deadline(m.taskNo)
	case msgCancel:
		l.cancel(m)
	case msgRetry:
		l.retry(m)
	case msgFailover:
		l.maybeFailover()
	case msgFailback:
		l.maybeFailback()
	case msgStop:
		l.stopping = true
	case msgBarrier:
		l.barriers = append(l.barriers, m.reply)
	case msgWake:
		l.retryFwd = true
	}
}

// waitsForRestore reports whether msg is about a task this lane does not
// hold yet and may receive from the restore still running. New tasks wait
// too, so they queue behind the restored backlog in seq order instead of
// printing before it.
func (l *lane) waitsForRestore(msg laneMsg) bool {
	var no string
	switch m := msg.(type) {
	case msgTask:
		return true
	case msgDeadline:
		no = m.taskNo
	case msgCancel:
		no = m.taskNo
	case msgRetry:
		no = m.taskNo
	default:
		return false
	}
	_, held := l.held[no]
	return !held
}

func (l *lane) now() time.Time { return l.clock.Now() }

// publish shares the lane's state with the monitor, the API and metrics.
func (l *lane) publish() {
	n := l.queue.len() + l.parked.Len() + len(l.toQueue) + len(l.toPark)
	if l.inflight != nil {
		n++
	}
	l.hasWork.Store(n > 0 || len(l.waiting) > 0)
	state := string(l.state)
	if state == "" {
		state = "UNKNOWN"
	}
	l.infoMu.Lock()
	changed := l.snap.State != state || l.snap.FailoverTo != l.failedOver
	l.snap.State, l.snap.Queue, l.snap.FailoverTo, l.snap.Since = state, n, l.failedOver, l.stateSince
	l.infoMu.Unlock()
	l.m.SetQueueDepth(l.name, n)
	if changed {
		l.m.SetPrinterState(l.name, state)
	}
}

func (l *lane) observe(e Event) { l.host.observe(e) }

func (l *lane) info() api.PrinterInfo {
	l.infoMu.Lock()
	defer l.infoMu.Unlock()
	return l.snap
}

// closeDevice lets go of the lane's printer connection; its goroutines
// have ended.
func (l *lane) closeDevice() {
	if c, ok := l.dev.(io.Closer); ok {
		if err := c.Close(); err != nil {
			l.log.Warn("closing printer connection", "err", err)
		}
	}
}
