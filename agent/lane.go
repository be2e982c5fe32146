package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"printgate/agent/config"
	"printgate/agent/localapi"
	"printgate/agent/wheel"
	"printgate/drivers"
	"printgate/drivers/escpos"
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

// renderError is a job that could not be built from its stored task; it
// ends the task FAILED with reason RENDER through the job-outcome path, so
// a spool that cannot record that is retried like any other outcome.
type renderError struct{ err error }

func (e *renderError) Error() string { return "render: " + e.err.Error() }
func (e *renderError) Unwrap() error { return e.err }

// lane prints the tasks of one physical printer strictly one at a time. All
// fields below the inbox are owned by the run goroutine.
type lane struct {
	a       *Agent
	pc      *config.Printer
	name    string
	dev     Printer
	backoff wheel.Backoff
	log     *slog.Logger

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
	snap     localapi.PrinterInfo
	lastTask string    // the last task this printer put on paper
	lastAt   time.Time // and when

	// held indexes every task the lane holds, wherever it is: a task
	// delivered twice is taken once.
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
	b := wheel.Backoff{Base: d.RetryBase, Factor: d.RetryFactor, Cap: d.RetryCap, Jitter: d.RetryJitter}
	if b.Factor == 0 {
		b.Factor = 2
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("printer %s: retry policy: %w", pc.Name, err)
	}
	l := &lane{
		a: a, pc: pc, name: pc.Name, dev: dev, backoff: b,
		log:      a.log.With("printer", pc.Name),
		signal:   make(chan struct{}, 1),
		pollNow:  make(chan struct{}, 1),
		jobEnded: make(chan struct{}, 1),
		idle:     make(chan struct{}),
		held:     map[string]*entry{},
		waiting:  map[string]*entry{},
	}
	l.snap = localapi.PrinterInfo{Name: pc.Name, URL: pc.URL, State: "UNKNOWN"}
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
	defer l.a.recoverCore("lane " + l.name)
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

// move records a transition of e's task, compare-and-set on the state the
// lane last stored, and keeps the stored copy. It reports whether the task
// moved. When it did not, l.moveErr says why: spool trouble (disk full, I/O:
// see spoolTrouble) leaves the task as it was for the caller to keep and
// retry; a refusal means the lane's copy was stale, and the task has been
// handed back to the lane from its stored state (resync).
func (l *lane) move(e *entry, to spool.State, c spool.Change) bool {
	_, ok := l.movePath(e, []spool.State{to}, c)
	return ok
}

// movePath is move through several states in one transaction (one fsync);
// only the final state is logged and observed, the timeline has every step.
// It also returns the full task as stored, body included.
func (l *lane) movePath(e *entry, path []spool.State, c spool.Change) (*spool.Task, bool) {
	from := e.task.State
	to := path[len(path)-1]
	t, err := l.a.spool.TransitionPath(e.task.TaskNo, from, path, c)
	l.moveErr = err
	if err != nil {
		if spoolTrouble(err) {
			e.writeFails++
			l.log.Error("spool could not record a transition; the task is kept and the write retried", "task_no", e.task.TaskNo, "from", from, "to", to, "err", err)
			return nil, false
		}
		l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", from, "to", to, "err", err)
		l.resync(e)
		return nil, false
	}
	e.writeFails = 0
	e.task = lite(t)
	l.logMove(t, from, to, c)
	if to.Terminal() {
		l.forget(e)
	}
	return t, true
}

func (l *lane) logMove(t *spool.Task, from, to spool.State, c spool.Change) {
	attrs := []any{"task_no", t.TaskNo, "from", from, "state", to, "attempt", t.Attempts}
	if c.Reason != "" {
		attrs = append(attrs, "reason", c.Reason)
	}
	if c.Message != "" {
		attrs = append(attrs, "message", c.Message)
	}
	if t.Target != "" {
		attrs = append(attrs, "target", t.Target)
	}
	level := slog.LevelInfo
	switch to {
	case spool.StateTimedOut, spool.StateFailed, spool.StateUnknown, spool.StateHeld:
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "task "+string(to), attrs...)
	l.observe(Event{Printer: l.name, Task: t})
}

// forget drops a task the lane no longer holds: finished, or handed on.
func (l *lane) forget(e *entry) {
	no := e.task.TaskNo
	delete(l.held, no)
	if e.task.State.Terminal() {
		l.a.dropOwner(no)
		l.a.deadlines.Cancel(no)
	}
}

// resync handles a move the spool refused: the lane's copy of the task was
// stale (compare-and-set failed) or its decision illegal. The stored task is
// the authority: the lane drops its copy and, if the task is still waiting
// to print here, takes it again from its stored state. A refusal is never
// applied silently and never loses the task.
func (l *lane) resync(e *entry) {
	no := e.task.TaskNo
	delete(l.held, no)
	t, err := l.a.spool.Get(no)
	switch {
	case err != nil:
		l.log.Error("task unreadable after a refused transition", "task_no", no, "err", err)
	case t.State.Terminal():
		l.a.dropOwner(no)
		l.a.deadlines.Cancel(no)
	case errors.Is(l.moveErr, spool.ErrIllegalTransition):
		// The lane asked for a move the state table forbids: a bug, not a
		// race. Leave the task to its deadline rather than loop; the
		// deadline reaches it even though no lane holds it (deadlineMissed).
		l.log.Error("lane asked for an illegal transition; the task waits for its deadline", "task_no", no, "state", t.State)
	case t.Lane() == l.name:
		l.receive(t)
	default:
		l.a.setOwner(no, t.Lane())
		if other := l.a.lane(t.Lane()); other != nil {
			other.post(msgTask{task: t})
		}
	}
}

// moveAll moves every entry to state to in one transaction and returns the
// entries that moved (with their stored copies updated) and those the spool
// could not write, each in order. The caller keeps the ones that did not
// move where they were, so a spool that cannot write (disk full) loses no
// task from the lane. Entries whose copy was stale are resynced and in
// neither list.
func (l *lane) moveAll(entries []*entry, to spool.State, c spool.Change) (moved, kept []*entry) {
	if len(entries) == 0 {
		return nil, nil
	}
	moves := make([]spool.Move, len(entries))
	for i, e := range entries {
		moves[i] = spool.Move{TaskNo: e.task.TaskNo, From: e.task.State, Path: []spool.State{to}, Change: c}
	}
	results, err := l.a.spool.TransitionBatch(moves)
	if err != nil {
		l.log.Error("batch transition failed; tasks keep their state", "to", to, "tasks", len(entries), "err", err)
		l.wakeLater()
		return nil, entries
	}
	for i, r := range results {
		e := entries[i]
		if r.Err != nil {
			l.moveErr = r.Err
			l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", e.task.State, "to", to, "err", r.Err)
			l.resync(e)
			continue
		}
		from := e.task.State
		e.task = lite(r.Task)
		l.log.Info("task "+string(to), "task_no", e.task.TaskNo, "from", from, "state", to, "attempt", e.task.Attempts, "reason", c.Reason)
		l.observe(Event{Printer: l.name, Task: r.Task})
		if to.Terminal() {
			l.forget(e)
		}
		moved = append(moved, e)
	}
	return moved, kept
}

// spoolTrouble reports whether a failed move was the spool failing to write
// (disk full, I/O) rather than a refusal: the task is still the lane's and
// the move must be tried again.
func spoolTrouble(err error) bool {
	return err != nil && !errors.Is(err, spool.ErrIllegalTransition) && !errors.Is(err, spool.ErrStateChanged) && !errors.Is(err, spool.ErrNotFound)
}

// wakeLater makes the lane look at its work again in a second, after a
// spool write failed.
func (l *lane) wakeLater() {
	l.a.after("wake:"+l.name, time.Second, l.name, msgWake{})
}

// retryLater holds e aside and acts on it again after a backoff that grows
// with its failed writes (1 s, 2 s, … 30 s): the write that failed is
// retried from the task's stored state by redo.
func (l *lane) retryLater(e *entry) {
	n := min(max(e.writeFails, 1), 6)
	delay := min(time.Second<<(n-1), 30*time.Second)
	l.waiting[e.task.TaskNo] = e
	l.a.after("redo:"+e.task.TaskNo, delay, l.name, msgRedo{taskNo: e.task.TaskNo})
	l.trouble(e)
}

// trouble tells observers that e's next state could not be recorded and
// will be tried again; called once the retry is scheduled, so a test that
// waits for it can move the clock past the retry.
func (l *lane) trouble(e *entry) {
	l.observe(Event{Printer: l.name, Task: e.task, Err: l.moveErr})
}

// redo acts on a task held aside, by its stored state: a retry that is due,
// an outcome-unknown policy or a restart re-arm whose write failed before.
func (l *lane) redo(e *entry) {
	no := e.task.TaskNo
	switch e.task.State {
	case spool.StateRetryWait:
		delete(l.waiting, no)
		l.requeue(e, spool.Change{Reason: "retry due"})
	case spool.StateUnknown:
		delete(l.waiting, no)
		l.unknown(e)
	case spool.StateSending:
		delete(l.waiting, no)
		l.restartedSending(e)
	}
}

// receive takes a task into the lane according to its stored state. A task
// the lane already holds (delivered twice: restored and submitted, or
// forwarded twice) is taken once.
func (l *lane) receive(t *spool.Task) {
	if _, dup := l.held[t.TaskNo]; dup {
		l.log.Debug("task already held by this lane", "task_no", t.TaskNo)
		return
	}
	e := &entry{task: lite(t)}
	l.held[t.TaskNo] = e
	if l.failedOver != "" && forwardable(t.State) {
		if !l.forward(e) {
			l.place(e)
		}
		return
	}
	switch t.State {
	case spool.StateAccepted:
		switch {
		case l.inflight == nil && !l.stopping && l.queue.len() == 0 && len(l.toQueue) == 0 && (l.state == escpos.StateReady || l.state == ""):
			// It can go out at once: start takes it through QUEUED to
			// SENDING in one transaction instead of two.
			l.queue.push(e)
		case l.state == escpos.StateOffline:
			l.toPark = append(l.toPark, e)
		default:
			l.toQueue = append(l.toQueue, e)
		}
	case spool.StateQueued:
		l.queue.push(e)
	case spool.StateParked:
		l.parked.push(e)
	case spool.StateRetryWait:
		l.waiting[t.TaskNo] = e
		l.a.after("redo:"+t.TaskNo, t.NextDue.Sub(l.now()), l.name, msgRedo{taskNo: t.TaskNo})
	case spool.StateSending:
		l.restartedSending(e)
	case spool.StateUnknown:
		l.unknown(e)
	case spool.StateHeld:
		l.waiting[t.TaskNo] = e
	default:
		delete(l.held, t.TaskNo)
		l.log.Error("lane received a task in an unexpected state", "task_no", t.TaskNo, "state", t.State)
	}
}

// restartedSending handles a task found SENDING at start: the agent died
// with job bytes possibly out. Nobody knows whether paper came out.
func (l *lane) restartedSending(e *entry) {
	if l.move(e, spool.StateUnknown, spool.Change{Reason: "agent restarted while sending"}) {
		l.unknown(e)
		return
	}
	if spoolTrouble(l.moveErr) {
		l.retryLater(e)
	}
}

// place puts an entry the lane keeps back where its stored state says.
func (l *lane) place(e *entry) {
	switch e.task.State {
	case spool.StateParked:
		l.parked.push(e)
	case spool.StateRetryWait, spool.StateHeld, spool.StateUnknown, spool.StateSending:
		l.retryLater(e)
	default:
		l.queue.push(e)
	}
}

// flush records the tasks collected in this inbox round: accepted tasks to
// QUEUED or PARKED and expired deadlines to TIMED_OUT, each group in one
// transaction. A lane receiving thousands of tasks while its printer is
// offline parks them in a few fsyncs, so no ACCEPTED backlog builds up.
// Tasks whose write failed stay where the lane can still print them: an
// ACCEPTED task is as printable as a QUEUED one.
func (l *lane) flush() {
	if q := l.toQueue; len(q) > 0 {
		l.toQueue = nil
		moved, kept := l.moveAll(q, spool.StateQueued, spool.Change{})
		for _, e := range append(moved, kept...) {
			l.queue.push(e)
		}
	}
	if p := l.toPark; len(p) > 0 {
		l.toPark = nil
		moved, kept := l.moveAll(p, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline})
		for _, e := range append(moved, kept...) {
			l.parked.push(e)
		}
	}
	if x := l.expiring; len(x) > 0 {
		if wait := l.started.Add(firstReadingWait).Sub(l.now()); l.state == "" && wait > 0 {
			// No reading of the printer yet (just started, deadlines that
			// passed while the agent was down): the reason must be the
			// state the printer is in, so wait for the first reading.
			if !l.expiryWake {
				l.expiryWake = true
				l.a.after("expire:"+l.name, wait, l.name, msgWake{})
			}
		} else {
			l.expiring = nil
			l.expire(x)
		}
	}
	if l.toQueue != nil || l.toPark != nil {
		// A resync during the flush handed tasks back: take them next round.
		l.post(msgWake{})
	}
}

// firstReadingWait bounds how long deadlines wait for a lane's first
// reading of its printer, so their reason is the printer's actual state: a
// status poll's own timeout and a little more.
const firstReadingWait = 10 * time.Second

// forwardable reports whether a task in state s may move to a backup.
func forwardable(s spool.State) bool {
	switch s {
	case spool.StateAccepted, spool.StateQueued, spool.StateParked, spool.StateRetryWait:
		return true
	}
	return false
}

// forward moves a task to the backup this printer failed over to. It
// returns false when the spool could not record the move: the caller keeps
// the task and the lane tries again on its next wake.
func (l *lane) forward(e *entry) bool {
	to := l.failedOver
	t, ok := l.movePath(e, []spool.State{spool.StateQueued}, spool.Change{Target: &to, Reason: "failover " + l.name + " → " + to})
	if !ok {
		if spoolTrouble(l.moveErr) {
			l.wakeLater()
			l.trouble(e)
			return false
		}
		return true // refused: resync took care of it
	}
	l.handOver(e, t)
	return true
}

// handOver gives a task this lane moved to another lane.
func (l *lane) handOver(e *entry, t *spool.Task) {
	delete(l.held, t.TaskNo)
	l.a.setOwner(t.TaskNo, t.Lane())
	if other := l.a.lane(t.Lane()); other != nil {
		other.post(msgTask{task: t})
		return
	}
	// The lane it moved to was removed by a reload meanwhile: the task is
	// on record there, and the reload's sweep or its deadline reaches it.
	l.log.Warn("task moved to a printer that is no longer configured", "task_no", t.TaskNo, "to", t.Lane())
}

// unknown applies the printer's on_unknown policy to a task in UNKNOWN.
func (l *lane) unknown(e *entry) {
	if e.timedOut || !e.task.Deadline.After(l.now()) {
		l.timeoutOrKeep(e, spool.ReasonNoAck, "the link failed after the job was sent; it may or may not have printed")
		return
	}
	if l.pc.OnUnknown == "hold" {
		if l.move(e, spool.StateHeld, spool.Change{Reason: "outcome unknown: held for a manager"}) {
			l.waiting[e.task.TaskNo] = e
		} else if spoolTrouble(l.moveErr) {
			l.retryLater(e)
		}
		return
	}
	dup := true
	l.requeue(e, spool.Change{Reason: "outcome unknown: reprinting marked POSSIBLE DUPLICATE", PossibleDuplicate: &dup})
}

// timeoutOrKeep ends e TIMED_OUT, or keeps it aside to try again when the
// spool cannot write.
func (l *lane) timeoutOrKeep(e *entry, reason, msg string) {
	if !l.timeout(e, reason, msg) && spoolTrouble(l.moveErr) {
		l.retryLater(e)
	}
}

// requeue puts e back in the queue (or forwards it when failed over). If
// the spool cannot write, e is kept aside in its current state and the same
// decision is taken again after a backoff.
func (l *lane) requeue(e *entry, c spool.Change) {
	if l.failedOver != "" {
		to := l.failedOver
		c.Target = &to
		if t, ok := l.movePath(e, []spool.State{spool.StateQueued}, c); ok {
			l.handOver(e, t)
		} else if spoolTrouble(l.moveErr) {
			l.retryLater(e)
		}
		return
	}
	if l.move(e, spool.StateQueued, c) {
		l.queue.push(e)
	} else if spoolTrouble(l.moveErr) {
		l.retryLater(e)
	}
}

func (l *lane) now() time.Time { return l.a.opts.Clock.Now() }

// dispatch starts the next job when the printer may take one.
func (l *lane) dispatch() {
	l.maybeFailover()
	if l.failedOver != "" && l.retryFwd {
		l.retryFwd = false
		l.forwardAll()
	}
	if l.inflight != nil || l.stopping {
		return
	}
	if l.state == escpos.StateReady && l.parked.Len() > 0 {
		// The printer is back: parked tasks rejoin the queue in memory and
		// each goes PARKED → QUEUED → SENDING in the one commit that starts
		// it, instead of a rewrite of the whole backlog first.
		for _, e := range l.parked.drain() {
			l.queue.push(e)
		}
	}
	// An unknown state (no reading yet) is worth a try: Print checks the
	// printer's health before sending anything.
	if l.queue.len() == 0 || (l.state != "" && l.state != escpos.StateReady) {
		return
	}
	l.start(l.queue.pop(l.now(), l.a.opts.AgeAfter))
}

// start records e as SENDING and sends it; the outcome arrives as
// msgJobDone. The job is rendered from the task as stored by the SENDING
// transaction, so its banners (POSSIBLE DUPLICATE, FAILOVER, REPRINT) are
// the ones on record, never those of a stale copy.
func (l *lane) start(e *entry) {
	attempts := e.task.Attempts + 1
	path := []spool.State{spool.StateSending}
	if e.task.State == spool.StateAccepted || e.task.State == spool.StateParked {
		path = []spool.State{spool.StateQueued, spool.StateSending}
	}
	t, ok := l.startCommit(e, path, spool.Change{Attempts: &attempts})
	if !ok {
		if spoolTrouble(l.moveErr) {
			l.queue.push(e)
			if l.inflight == nil {
				l.wakeLater()
			}
			l.trouble(e)
		}
		return
	}
	l.inflight = e
	l.printing.Store(true)
	job, err := render(t, l)
	if err != nil {
		l.post(msgJobDone{e: e, err: &renderError{err}})
		return
	}
	ctx, cancel := context.WithTimeout(l.a.ctx, l.jobTimeout(len(job)))
	seq := t.Seq
	go func() {
		defer cancel()
		defer l.a.recoverCore("print job on " + l.name)
		conf, err := l.dev.Print(ctx, job, seq)
		l.post(msgJobDone{e: e, conf: conf, err: err})
	}()
}

// startCommit records e entering SENDING, together with the PRINTED of the
// job that just finished when there is one, in one transaction. If that
// commit fails, neither happens: the finished job is held in flight again
// (nothing else prints while its outcome is unrecorded) and e stays queued.
func (l *lane) startCommit(e *entry, path []spool.State, c spool.Change) (*spool.Task, bool) {
	d := l.printedDue
	if d == nil {
		return l.movePath(e, path, c)
	}
	l.printedDue = nil
	conf := spool.Confirmation(d.conf.String())
	done := d.e
	results, err := l.a.spool.TransitionBatch([]spool.Move{
		{TaskNo: done.task.TaskNo, From: done.task.State, Path: []spool.State{spool.StatePrinted}, Change: spool.Change{Confirmation: conf}},
		{TaskNo: e.task.TaskNo, From: e.task.State, Path: path, Change: c},
	})
	l.moveErr = err
	if err != nil {
		l.log.Error("spool could not record a job's outcome and the next job's start; both are kept and retried", "task_no", done.task.TaskNo, "next", e.task.TaskNo, "err", err)
		l.holdPrinted(d)
		return nil, false
	}
	l.recordPrinted(done, conf, results[0])
	r := results[1]
	if r.Err != nil {
		l.moveErr = r.Err
		l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", e.task.State, "to", spool.StateSending, "err", r.Err)
		l.resync(e)
		return nil, false
	}
	from := e.task.State
	e.writeFails = 0
	e.task = lite(r.Task)
	l.logMove(r.Task, from, spool.StateSending, c)
	return r.Task, true
}

// flushPrinted records a finished job's PRINTED that no next job carried.
func (l *lane) flushPrinted() {
	d := l.printedDue
	if d == nil {
		return
	}
	l.printedDue = nil
	conf := spool.Confirmation(d.conf.String())
	res, err := l.a.spool.TransitionBatch([]spool.Move{{TaskNo: d.e.task.TaskNo, From: d.e.task.State, Path: []spool.State{spool.StatePrinted}, Change: spool.Change{Confirmation: conf}}})
	l.moveErr = err
	if err != nil {
		l.log.Error("spool could not record a job's outcome; the job is kept and the write retried", "task_no", d.e.task.TaskNo, "err", err)
		l.holdPrinted(d)
		return
	}
	l.recordPrinted(d.e, conf, res[0])
}

// recordPrinted takes the result of a PRINTED move of e.
func (l *lane) recordPrinted(e *entry, conf spool.Confirmation, r spool.MoveResult) {
	if r.Err != nil {
		l.moveErr = r.Err
		l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", e.task.State, "to", spool.StatePrinted, "err", r.Err)
		l.resync(e)
		return
	}
	from := e.task.State
	e.task = lite(r.Task)
	// Before logMove tells the observers (the page re-reads the printer's
	// details on that notice): the last ticket must already be this one.
	l.infoMu.Lock()
	l.lastTask, l.lastAt = r.Task.TaskNo, r.Task.UpdatedAt
	l.infoMu.Unlock()
	l.logMove(r.Task, from, spool.StatePrinted, spool.Change{Confirmation: conf})
	l.forget(e)
	l.a.m.ObservePrinted(l.name, string(conf), e.task.UpdatedAt.Sub(e.task.AcceptedAt))
	l.a.m.IncAttempt(l.name, "printed")
}

// holdPrinted keeps a printed job whose outcome could not be written in
// flight, so nothing else prints, and offers its outcome again shortly.
func (l *lane) holdPrinted(d *msgJobDone) {
	l.inflight = d.e
	l.printing.Store(true)
	l.a.after("jobdone:"+d.e.task.TaskNo, time.Second, l.name, *d)
	l.trouble(d.e)
}

// jobTimeout bounds one Print call of n job bytes: the printer's
// job_timeout, stretched on a serial line by the time the job and any
// resync preamble owed to the printer take at its baud rate, so a large
// logo at 9600 baud is not cut off and reprinted in a loop.
func (l *lane) jobTimeout(n int) time.Duration {
	base := l.pc.JobTimeout
	if l.a.opts.JobTimeout > 0 {
		base = l.a.opts.JobTimeout
	}
	if base <= 0 {
		base = 30 * time.Second
	}
	if l.pc.Target.Scheme != drivers.SchemeSerial {
		return base
	}
	if r, ok := l.dev.(interface{ ResyncPending() int }); ok {
		n += r.ResyncPending()
	}
	return escpos.JobTimeout(base, n, l.pc.Target.Line.Baud)
}

// jobDone records a job's outcome (DESIGN.md "Completion gate").
func (l *lane) jobDone(m msgJobDone) {
	e := m.e
	l.inflight = nil
	l.printing.Store(false)
	select {
	case l.jobEnded <- struct{}{}:
	default:
	}
	l.moveErr = nil
	defer func() {
		if e.task.State == spool.StateSending && spoolTrouble(l.moveErr) {
			// The outcome could not be written (disk full?). Keep the job
			// in flight, so nothing else prints while its fate is unrecorded,
			// and record it again shortly.
			l.inflight = e
			l.printing.Store(true)
			l.a.after("jobdone:"+e.task.TaskNo, time.Second, l.name, m)
			l.trouble(e)
		}
	}()
	var re *renderError
	if errors.As(m.err, &re) {
		l.a.m.IncAttempt(l.name, "render_failed")
		l.move(e, spool.StateFailed, spool.Change{Reason: spool.ReasonRender, Message: re.err.Error()})
		return
	}
	if m.err == nil {
		// PRINTED is recorded in the same commit as the next job's SENDING
		// (start), or alone at the end of this inbox round (flushPrinted):
		// one fsync per ticket instead of two while a lane drains.
		l.printedDue = &m
		l.failures = 0
		if l.state != escpos.StateReady {
			l.setState(escpos.StateReady, nil)
		}
		return
	}
	var pe *escpos.PrintError
	errors.As(m.err, &pe)
	sent := pe != nil && pe.Sent
	refund := e.task.Attempts - 1
	switch {
	case errors.Is(m.err, escpos.ErrOutcomeUnknown) || sent:
		l.a.m.IncAttempt(l.name, "outcome_unknown")
		l.failures++
		l.setState("", m.err)
		if l.move(e, spool.StateUnknown, spool.Change{Reason: "outcome unknown", Message: m.err.Error()}) {
			l.unknown(e)
		}
	case errors.Is(m.err, escpos.ErrOffline):
		l.a.m.IncAttempt(l.name, "offline")
		l.setState(escpos.StateOffline, m.err)
		if e.timedOut {
			l.timeout(e, spool.ReasonDeviceOffline, m.err.Error())
			return
		}
		if l.move(e, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline, Message: m.err.Error(), Attempts: &refund}) {
			l.parked.push(e)
		}
	case errors.Is(m.err, escpos.ErrPaperOut), errors.Is(m.err, escpos.ErrCoverOpen),
		errors.Is(m.err, escpos.ErrBusy), errors.Is(m.err, escpos.ErrPrinterFault):
		// Not ready is not a failure: wait for the printer, spend nothing.
		l.a.m.IncAttempt(l.name, "not_ready")
		st := stateOf(m.err)
		l.setState(st, m.err)
		if e.timedOut {
			l.timeout(e, reasonFor(st), m.err.Error())
			return
		}
		if l.move(e, spool.StateQueued, spool.Change{Reason: string(st), Message: m.err.Error(), Attempts: &refund}) {
			l.queue.push(e)
		}
	default:
		l.a.m.IncAttempt(l.name, "failed")
		l.failures++
		l.setState("", m.err)
		switch {
		case e.timedOut:
			l.timeout(e, spool.ReasonNoAck, m.err.Error())
		case l.a.cfg.Defaults.MaxAttempts > 0 && e.task.Attempts >= l.a.cfg.Defaults.MaxAttempts:
			l.move(e, spool.StateFailed, spool.Change{Reason: spool.ReasonMaxAttempts, Message: m.err.Error()})
		default:
			delay := l.a.jitter(l.backoff, e.task.Attempts-1)
			due := l.now().Add(delay)
			if l.move(e, spool.StateRetryWait, spool.Change{Reason: "send failed", Message: m.err.Error(), NextDue: &due}) {
				l.waiting[e.task.TaskNo] = e
				l.a.after("redo:"+e.task.TaskNo, delay, l.name, msgRedo{taskNo: e.task.TaskNo})
			}
		}
	}
	if l.failures >= l.pc.FailoverFailures && l.pc.FailoverFailures > 0 {
		l.failover(fmt.Sprintf("%d failed attempts in a row", l.failures))
	}
}

// stateOf maps a not-ready print error to the printer state it shows.
func stateOf(err error) escpos.PrinterState {
	switch {
	case errors.Is(err, escpos.ErrPaperOut):
		return escpos.StatePaperOut
	case errors.Is(err, escpos.ErrCoverOpen):
		return escpos.StateCoverOpen
	case errors.Is(err, escpos.ErrPrinterFault):
		return escpos.StateError
	case errors.Is(err, escpos.ErrOffline):
		return escpos.StateOffline
	}
	return escpos.StateBusy
}

// reasonFor is the TIMED_OUT reason for a printer seen in state st.
func reasonFor(st escpos.PrinterState) string {
	switch st {
	case escpos.StateOffline:
		return spool.ReasonDeviceOffline
	case escpos.StatePaperOut:
		return spool.ReasonPaperOut
	}
	return spool.ReasonBusy
}

// setState records the printer's state; err explains a reading that is not
// READY. An empty state means "not known": the monitor is asked to look now.
func (l *lane) setState(st escpos.PrinterState, err error) {
	if st != escpos.StateReady {
		l.stateErr = err
	}
	if st == "" {
		select {
		case l.pollNow <- struct{}{}:
		default:
		}
		if l.state == escpos.StateReady {
			// Stop pushing until the monitor has looked again.
			st = escpos.StateBusy
		} else {
			return
		}
	}
	if st == l.state {
		return
	}
	prev := l.state
	l.state = st
	l.stateSince = l.now()
	l.ready.Store(st == escpos.StateReady)
	// Observers hear of the change once its timers are set, so a test that
	// waits for it can move the clock past them.
	defer l.observe(Event{Printer: l.name, State: string(st)})
	attrs := []any{"from", prev, "state", st}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	if st == escpos.StateReady {
		l.log.Info("printer state", attrs...)
		l.a.push.Cancel("failover:" + l.name)
		if l.failedOver != "" {
			l.a.after("failback:"+l.name, l.pc.FailbackAfter, l.name, msgFailback{})
		}
		return
	}
	l.log.Warn("printer state", attrs...)
	l.a.push.Cancel("failback:" + l.name)
	if prev == escpos.StateReady || prev == "" {
		if l.pc.Backup != "" && l.failedOver == "" {
			l.a.after("failover:"+l.name, l.pc.FailoverAfter, l.name, msgFailover{})
		}
	}
	if st == escpos.StateOffline {
		var toPark []*entry
		for _, e := range l.queue.drain() {
			if e.task.State == spool.StateParked {
				l.parked.push(e) // still parked on record: nothing to write
			} else {
				toPark = append(toPark, e)
			}
		}
		moved, kept := l.moveAll(toPark, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline})
		for _, e := range moved {
			l.parked.push(e)
		}
		for _, e := range kept {
			l.queue.push(e)
		}
	}
}

// deadline handles a task's deadline passing. The task times out at the end
// of the inbox round together with every other deadline of that round, in
// one transaction.
func (l *lane) deadline(taskNo string) {
	if l.inflight != nil && l.inflight.task.TaskNo == taskNo {
		l.inflight.timedOut = true
		return
	}
	if l.printedDue != nil && l.printedDue.e.task.TaskNo == taskNo {
		return // it printed; PRINTED is being recorded
	}
	e := l.held[taskNo]
	if e == nil {
		for _, x := range l.toQueue {
			if x.task.TaskNo == taskNo {
				e = x
			}
		}
	}
	if e == nil {
		l.a.deadlineMissed(taskNo, l.name)
		return
	}
	l.expiring = append(l.expiring, e)
}

// expire times out the entries whose deadline passed, grouped by reason.
// An entry whose write failed goes back where it was and its deadline is
// delivered again in a second.
func (l *lane) expire(list []*entry) {
	type why struct{ reason, msg string }
	groups := map[why][]*entry{}
	var order []why
	for _, e := range list {
		if l.held[e.task.TaskNo] != e {
			continue // gone meanwhile (printed, canceled)
		}
		if l.inflight == e {
			e.timedOut = true // started meanwhile: its outcome decides
			continue
		}
		l.detach(e)
		r, m := l.timeoutReason(e)
		k := why{r, m}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	for _, k := range order {
		moved, kept := l.moveAll(groups[k], spool.StateTimedOut, spool.Change{Reason: k.reason, Message: k.msg})
		for range moved {
			l.a.m.IncTimeout(l.name, k.reason)
		}
		for _, e := range kept {
			l.place(e)
			l.a.deadlines.After(e.task.TaskNo, time.Second, struct{}{})
		}
	}
}

// detach takes e out of whichever list holds it, keeping it in held.
func (l *lane) detach(e *entry) {
	no := e.task.TaskNo
	if _, ok := l.waiting[no]; ok {
		delete(l.waiting, no)
		l.a.push.Cancel("redo:" + no)
		return
	}
	if !l.queue.remove(e) {
		l.parked.remove(e)
	}
	for i, x := range l.toQueue {
		if x == e {
			l.toQueue = append(l.toQueue[:i], l.toQueue[i+1:]...)
			break
		}
	}
	for i, x := range l.toPark {
		if x == e {
			l.toPark = append(l.toPark[:i], l.toPark[i+1:]...)
			break
		}
	}
}

// timeoutReason says why e did not print in time: first from the state its
// printer is actually in, then from the task's own history.
func (l *lane) timeoutReason(e *entry) (string, string) {
	since := ""
	if !l.stateSince.IsZero() {
		since = fmt.Sprintf(" since %s", l.stateSince.Format(time.TimeOnly))
	}
	switch {
	case l.state == escpos.StateOffline:
		return spool.ReasonDeviceOffline, fmt.Sprintf("printer %s offline%s", l.name, since)
	case l.state == escpos.StatePaperOut:
		return spool.ReasonPaperOut, fmt.Sprintf("printer %s out of paper%s", l.name, since)
	case errors.Is(l.stateErr, escpos.ErrNoAnswer) && l.state != escpos.StateReady:
		return spool.ReasonNoAck, fmt.Sprintf("printer %s is connected but does not answer%s", l.name, since)
	case e.task.State == spool.StateRetryWait || e.task.State == spool.StateHeld || e.task.State == spool.StateUnknown || e.task.Attempts > 0:
		return spool.ReasonNoAck, fmt.Sprintf("printer %s did not confirm the job after %d attempts", l.name, e.task.Attempts)
	case l.state == "" && e.task.State == spool.StateParked:
		// No reading since start: the last thing seen was the printer offline.
		return spool.ReasonDeviceOffline, fmt.Sprintf("printer %s was offline and has not answered since", l.name)
	case l.state != escpos.StateReady && l.state != "":
		return spool.ReasonBusy, fmt.Sprintf("printer %s %s%s", l.name, l.state, since)
	}
	return spool.ReasonBusy, fmt.Sprintf("printer %s had %d tasks ahead of this one", l.name, l.queue.len()+l.parked.Len())
}

// timeout ends e TIMED_OUT and reports whether it moved.
func (l *lane) timeout(e *entry, reason, msg string) bool {
	if l.move(e, spool.StateTimedOut, spool.Change{Reason: reason, Message: msg}) {
		l.a.m.IncTimeout(l.name, reason)
		return true
	}
	return false
}

func (l *lane) cancel(m msgCancel) {
	if l.inflight != nil && l.inflight.task.TaskNo == m.taskNo {
		m.reply <- cancelResult{err: fmt.Errorf("%w: task %s is being printed", localapi.ErrConflict, m.taskNo)}
		return
	}
	e := l.held[m.taskNo]
	if e == nil {
		m.reply <- cancelResult{err: fmt.Errorf("%w: task %s is not waiting in lane %s", localapi.ErrConflict, m.taskNo, l.name)}
		return
	}
	if !spool.CanTransition(e.task.State, spool.StateCanceled) {
		m.reply <- cancelResult{err: fmt.Errorf("%w: task %s is %s", localapi.ErrConflict, m.taskNo, e.task.State)}
		return
	}
	l.detach(e)
	t, err := l.a.spool.Transition(m.taskNo, e.task.State, spool.StateCanceled, spool.Change{Reason: "canceled"})
	if err != nil {
		// Put it back: the task is still ours and still waiting.
		l.place(e)
		m.reply <- cancelResult{err: fmt.Errorf("%w: %v", localapi.ErrConflict, err)}
		return
	}
	l.log.Info("task CANCELED", "task_no", m.taskNo)
	delete(l.held, m.taskNo)
	l.a.dropOwner(m.taskNo)
	l.a.deadlines.Cancel(m.taskNo)
	l.observe(Event{Printer: l.name, Task: t})
	m.reply <- cancelResult{task: t}
}

// retry queues a HELD task again for a manager (Agent.Retry): HELD →
// QUEUED in one compare-and-set transition, marked POSSIBLE DUPLICATE since
// its first copy may be on paper, on printer when one is named. The lane is
// the only writer of its tasks, so of two retries racing for the same task
// the first moves it and the second finds it no longer HELD: it prints once.
func (l *lane) retry(m msgRetry) {
	e := l.held[m.taskNo]
	if e == nil || e.task.State != spool.StateHeld || (l.inflight == e) {
		state := "not waiting in lane " + l.name
		if e != nil {
			state = string(e.task.State)
		}
		m.reply <- retryResult{err: fmt.Errorf("%w: task %s is %s, no longer HELD: it was retried or ended meanwhile", localapi.ErrConflict, m.taskNo, state)}
		return
	}
	to := m.printer
	if to == "" {
		// Where it is, or this printer's backup while failed over.
		to = l.name
		if l.failedOver != "" {
			to = l.failedOver
		}
	}
	l.detach(e)
	dup := true
	reason := "retried by a manager"
	if to != l.name {
		reason = "retried by a manager on " + to
	}
	t, ok := l.movePath(e, []spool.State{spool.StateQueued}, spool.Change{Target: &to, PossibleDuplicate: &dup, Reason: reason})
	if !ok {
		err := l.moveErr
		if spoolTrouble(err) {
			// Still HELD on record: it stays held here, for another try.
			l.waiting[m.taskNo] = e
			m.reply <- retryResult{err: fmt.Errorf("retry %s: the spool could not record it: %w", m.taskNo, err)}
			return
		}
		// Refused: the stored task moved on; resync has taken it.
		m.reply <- retryResult{err: fmt.Errorf("%w: task %s changed meanwhile: %v", localapi.ErrConflict, m.taskNo, err)}
		return
	}
	if t.Lane() == l.name {
		l.queue.push(e)
	} else {
		l.handOver(e, t)
	}
	m.reply <- retryResult{task: t}
}

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
	l.a.m.SetQueueDepth(l.name, n)
	if changed {
		l.a.m.SetPrinterState(l.name, state)
	}
}

func (l *lane) observe(e Event) {
	if obs := l.a.opts.Observe; obs != nil {
		obs(e)
	}
}

func (l *lane) info() localapi.PrinterInfo {
	l.infoMu.Lock()
	defer l.infoMu.Unlock()
	return l.snap
}
