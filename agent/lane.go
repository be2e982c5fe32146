package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"printgate/agent/localapi"
	"printgate/agent/wheel"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// laneMsg is anything posted to a lane's inbox.
type laneMsg any

type (
	// msgTask hands the lane a task: newly accepted, moved here by failover,
	// or restored from the spool at start.
	msgTask struct {
		task     *spool.Task
		restored bool
	}
	// msgStatus is the monitor's latest reading of the printer.
	msgStatus struct {
		state escpos.PrinterState
		err   error
	}
	msgRetryDue struct{ taskNo string }
	msgDeadline struct{ taskNo string }
	msgFailover struct{}
	msgFailback struct{}
	msgWake     struct{}
	msgStop     struct{}
	msgCancel   struct {
		taskNo string
		reply  chan cancelResult
	}
	msgJobDone struct {
		e    *entry
		conf escpos.Confirmation
		err  error
	}
)

type cancelResult struct {
	task *spool.Task
	err  error
}

// entry is a task the lane holds, with the latest stored copy.
type entry struct {
	task *spool.Task
	// timedOut is set when the deadline passed while the job was in flight:
	// the job's outcome decides between PRINTED and TIMED_OUT.
	timedOut bool
}

// lane prints the tasks of one physical printer strictly one at a time. All
// fields below the inbox are owned by the run goroutine.
type lane struct {
	a       *Agent
	pc      *PrinterConfig
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

	queue      []*entry // QUEUED, picked by (effective priority, seq)
	parked     []*entry // PARKED, in seq order
	waiting    map[string]*entry
	inflight   *entry
	state      escpos.PrinterState // "" until the first reading
	stateErr   error               // what explained the last not-ready reading
	stateSince time.Time
	failures   int    // failed attempts in a row
	failedOver string // backup receiving this printer's work, if failed over
	stopping   bool
	idleClosed bool
	moveErr    error // the last move's error, to tell refusal from trouble
}

func newLane(a *Agent, pc *PrinterConfig, dev Printer) (*lane, error) {
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

func (l *lane) run(ctx context.Context) {
	for {
		select {
		case <-l.signal:
		case <-ctx.Done():
			return
		}
		for _, msg := range l.take() {
			l.handle(msg)
		}
		l.dispatch()
		l.publish()
		if l.stopping && l.inflight == nil && !l.idleClosed {
			l.idleClosed = true
			close(l.idle)
		}
	}
}

func (l *lane) handle(msg laneMsg) {
	switch m := msg.(type) {
	case msgTask:
		l.receive(m.task)
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
	case msgRetryDue:
		if e, ok := l.waiting[m.taskNo]; ok && e.task.State == spool.StateRetryWait {
			delete(l.waiting, m.taskNo)
			l.requeue(e, spool.Change{Reason: "retry due"})
		}
	case msgDeadline:
		l.deadline(m.taskNo)
	case msgCancel:
		l.cancel(m)
	case msgFailover:
		l.maybeFailover()
	case msgFailback:
		l.maybeFailback()
	case msgStop:
		l.stopping = true
	case msgWake:
		// Nothing to do but dispatch again.
	}
}

// move records a transition of e's task and keeps the stored copy. On
// failure the entry is left as it was and the error logged: the spool's
// state table is the authority, and a refused move means someone else (a
// timeout, a cancel) already decided this task's fate.
func (l *lane) move(e *entry, to spool.State, c spool.Change) bool {
	return l.movePath(e, []spool.State{to}, c)
}

// movePath is move through several states in one transaction (one fsync);
// only the final state is logged and observed, the timeline has every step.
func (l *lane) movePath(e *entry, path []spool.State, c spool.Change) bool {
	from := e.task.State
	to := path[len(path)-1]
	t, err := l.a.spool.TransitionPath(e.task.TaskNo, from, path, c)
	l.moveErr = err
	if err != nil {
		l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", from, "to", to, "err", err)
		return false
	}
	e.task = t
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
	if to.Terminal() {
		l.a.dropOwner(t.TaskNo)
		l.a.deadlines.Cancel(t.TaskNo)
	}
	return true
}

// moveAll moves every entry to state to in one transaction and returns the
// entries that moved (with their stored copies updated) and those that did
// not, each in order. The caller keeps the ones that did not move where they
// were, so a spool that cannot write (disk full) loses no task from the lane.
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
			l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", e.task.State, "to", to, "err", r.Err)
			kept = append(kept, e)
			continue
		}
		from := e.task.State
		e.task = r.Task
		l.log.Info("task "+string(to), "task_no", e.task.TaskNo, "from", from, "state", to, "attempt", e.task.Attempts, "reason", c.Reason)
		l.observe(Event{Printer: l.name, Task: e.task})
		moved = append(moved, e)
	}
	return moved, kept
}

// spoolTrouble reports whether a failed move was the spool failing to write
// (disk full, I/O) rather than the state table refusing it: the task is
// still the lane's and the move must be tried again.
func spoolTrouble(err error) bool {
	return err != nil && !errors.Is(err, spool.ErrIllegalTransition) && !errors.Is(err, spool.ErrNotFound)
}

// wakeLater makes the lane look at its work again in a second, after a
// spool write failed.
func (l *lane) wakeLater() {
	l.a.after("wake:"+l.name, time.Second, l.name, msgWake{})
}

// receive takes a task into the lane according to its stored state.
func (l *lane) receive(t *spool.Task) {
	e := &entry{task: t}
	if l.failedOver != "" && l.forward(e) {
		return
	}
	switch t.State {
	case spool.StateAccepted:
		if l.inflight == nil && !l.stopping && len(l.queue) == 0 && (l.state == escpos.StateReady || l.state == "") {
			// It can go out at once: start takes it through QUEUED to
			// SENDING in one transaction instead of two.
			l.queue = append(l.queue, e)
			return
		}
		if l.state == escpos.StateOffline {
			if l.move(e, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline}) {
				l.parked = append(l.parked, e)
			}
			return
		}
		if l.move(e, spool.StateQueued, spool.Change{}) {
			l.queue = append(l.queue, e)
		}
	case spool.StateQueued:
		l.queue = append(l.queue, e)
	case spool.StateParked:
		l.parked = append(l.parked, e)
	case spool.StateRetryWait:
		l.waiting[t.TaskNo] = e
		l.a.after("retry:"+t.TaskNo, t.NextDue.Sub(l.a.opts.Clock.Now()), l.name, msgRetryDue{taskNo: t.TaskNo})
	case spool.StateSending:
		// Found SENDING at start: the agent died with job bytes possibly
		// out. Nobody knows whether paper came out.
		if l.move(e, spool.StateUnknown, spool.Change{Reason: "agent restarted while sending"}) {
			l.unknown(e)
		}
	case spool.StateUnknown:
		l.unknown(e)
	case spool.StateHeld:
		l.waiting[t.TaskNo] = e
	default:
		l.log.Error("lane received a task in an unexpected state", "task_no", t.TaskNo, "state", t.State)
	}
}

// forward moves a task to the backup this printer failed over to.
func (l *lane) forward(e *entry) bool {
	to := l.failedOver
	switch e.task.State {
	case spool.StateAccepted, spool.StateQueued, spool.StateParked, spool.StateRetryWait:
	default:
		return false
	}
	if !l.move(e, spool.StateQueued, spool.Change{Target: &to, Reason: "failover " + l.name + " → " + to}) {
		return false
	}
	l.a.setOwner(e.task.TaskNo, to)
	l.a.lanes[to].post(msgTask{task: e.task})
	return true
}

// unknown applies the printer's on_unknown policy to a task in UNKNOWN.
func (l *lane) unknown(e *entry) {
	if e.timedOut || !e.task.Deadline.After(l.now()) {
		l.timeout(e, spool.ReasonNoAck, "the link failed after the job was sent; it may or may not have printed")
		return
	}
	if l.pc.OnUnknown == "hold" {
		if l.move(e, spool.StateHeld, spool.Change{Reason: "outcome unknown: held for a manager"}) {
			l.waiting[e.task.TaskNo] = e
		}
		return
	}
	dup := true
	l.requeue(e, spool.Change{Reason: "outcome unknown: reprinting marked POSSIBLE DUPLICATE", PossibleDuplicate: &dup})
}

// requeue puts e back in the queue (or forwards it when failed over).
func (l *lane) requeue(e *entry, c spool.Change) {
	if l.failedOver != "" {
		to := l.failedOver
		c.Target = &to
		if l.move(e, spool.StateQueued, c) {
			l.a.setOwner(e.task.TaskNo, to)
			l.a.lanes[to].post(msgTask{task: e.task})
		}
		return
	}
	if l.move(e, spool.StateQueued, c) {
		l.queue = append(l.queue, e)
	}
}

func (l *lane) now() time.Time { return l.a.opts.Clock.Now() }

// dispatch starts the next job when the printer may take one.
func (l *lane) dispatch() {
	l.maybeFailover()
	if l.inflight != nil || l.stopping {
		return
	}
	if l.state == escpos.StateReady && len(l.parked) > 0 {
		parked := l.parked
		l.parked = nil
		moved, kept := l.moveAll(parked, spool.StateQueued, spool.Change{Reason: "printer back online"})
		l.queue = append(l.queue, moved...)
		l.parked = kept
	}
	// An unknown state (no reading yet) is worth a try: Print checks the
	// printer's health before sending anything.
	if len(l.queue) == 0 || (l.state != "" && l.state != escpos.StateReady) {
		return
	}
	i := l.next()
	e := l.queue[i]
	l.queue = slices.Delete(l.queue, i, i+1)
	l.start(e)
}

// next picks the queue index to print: urgent (or aged) before normal, then
// by accept sequence.
func (l *lane) next() int {
	now := l.now()
	best := -1
	var bestRank int
	var bestSeq uint64
	for i, e := range l.queue {
		rank := 1
		if e.task.Priority == spool.PriorityUrgent || now.Sub(e.task.AcceptedAt) >= l.a.opts.AgeAfter {
			rank = 0
		}
		if best < 0 || rank < bestRank || rank == bestRank && e.task.Seq < bestSeq {
			best, bestRank, bestSeq = i, rank, e.task.Seq
		}
	}
	return best
}

// start renders e and sends it; the outcome arrives as msgJobDone.
func (l *lane) start(e *entry) {
	job, err := render(e.task, l)
	if err != nil {
		l.move(e, spool.StateFailed, spool.Change{Reason: spool.ReasonRender, Message: err.Error()})
		l.a.m.IncAttempt(l.name, "render_failed")
		return
	}
	attempts := e.task.Attempts + 1
	path := []spool.State{spool.StateSending}
	if e.task.State == spool.StateAccepted {
		path = []spool.State{spool.StateQueued, spool.StateSending}
	}
	if !l.movePath(e, path, spool.Change{Attempts: &attempts}) {
		if spoolTrouble(l.moveErr) {
			l.queue = append(l.queue, e)
			l.wakeLater()
			l.observe(Event{Printer: l.name, Task: e.task, Err: l.moveErr})
		}
		return
	}
	l.inflight = e
	l.printing.Store(true)
	ctx, cancel := context.WithTimeout(l.a.ctx, l.a.opts.JobTimeout)
	seq := e.task.Seq
	go func() {
		defer cancel()
		conf, err := l.dev.Print(ctx, job, seq)
		l.post(msgJobDone{e: e, conf: conf, err: err})
	}()
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
	defer func() {
		if e.task.State == spool.StateSending && spoolTrouble(l.moveErr) {
			// The outcome could not be written (disk full?). Keep the job
			// in flight, so nothing else prints while its fate is unrecorded,
			// and record it again shortly.
			l.inflight = e
			l.printing.Store(true)
			l.a.after("jobdone:"+e.task.TaskNo, time.Second, l.name, m)
			l.observe(Event{Printer: l.name, Task: e.task, Err: l.moveErr})
		}
	}()
	if m.err == nil {
		conf := spool.Confirmation(m.conf.String())
		if l.move(e, spool.StatePrinted, spool.Change{Confirmation: conf}) {
			l.a.m.ObservePrinted(l.name, string(conf), e.task.UpdatedAt.Sub(e.task.AcceptedAt))
			l.a.m.IncAttempt(l.name, "printed")
		}
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
			l.parked = insertBySeq(l.parked, e)
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
			l.queue = append(l.queue, e)
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
				l.a.after("retry:"+e.task.TaskNo, delay, l.name, msgRetryDue{taskNo: e.task.TaskNo})
			}
		}
	}
	if l.failures >= l.pc.FailoverFailures && l.pc.FailoverFailures > 0 {
		l.failover(fmt.Sprintf("%d failed attempts in a row", l.failures))
	}
}

func insertBySeq(list []*entry, e *entry) []*entry {
	i, _ := slices.BinarySearchFunc(list, e.task.Seq, func(x *entry, seq uint64) int {
		switch {
		case x.task.Seq < seq:
			return -1
		case x.task.Seq > seq:
			return 1
		}
		return 0
	})
	return slices.Insert(list, i, e)
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
	l.observe(Event{Printer: l.name, State: string(st)})
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
		moved, kept := l.moveAll(l.queue, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline})
		l.queue = kept
		for _, e := range moved {
			l.parked = insertBySeq(l.parked, e)
		}
	}
}

// deadline handles a task's deadline passing.
func (l *lane) deadline(taskNo string) {
	if l.inflight != nil && l.inflight.task.TaskNo == taskNo {
		l.inflight.timedOut = true
		return
	}
	e := l.remove(taskNo)
	if e == nil {
		return
	}
	reason, msg := l.timeoutReason(e)
	l.timeout(e, reason, msg)
	if spoolTrouble(l.moveErr) {
		l.receive(e.task)
		l.a.deadlines.After(taskNo, time.Second, struct{}{})
	}
}

// timeoutReason says why e did not print in time, from what the lane saw.
func (l *lane) timeoutReason(e *entry) (string, string) {
	since := ""
	if !l.stateSince.IsZero() {
		since = fmt.Sprintf(" since %s", l.stateSince.Format(time.TimeOnly))
	}
	switch {
	case e.task.State == spool.StateParked || l.state == escpos.StateOffline:
		return spool.ReasonDeviceOffline, fmt.Sprintf("printer %s offline%s", l.name, since)
	case l.state == escpos.StatePaperOut:
		return spool.ReasonPaperOut, fmt.Sprintf("printer %s out of paper%s", l.name, since)
	case errors.Is(l.stateErr, escpos.ErrNoAnswer):
		return spool.ReasonNoAck, fmt.Sprintf("printer %s is connected but does not answer%s", l.name, since)
	case e.task.State == spool.StateRetryWait || e.task.State == spool.StateHeld || e.task.Attempts > 0:
		return spool.ReasonNoAck, fmt.Sprintf("printer %s did not confirm the job after %d attempts", l.name, e.task.Attempts)
	case l.state != escpos.StateReady && l.state != "":
		return spool.ReasonBusy, fmt.Sprintf("printer %s %s%s", l.name, l.state, since)
	}
	return spool.ReasonBusy, fmt.Sprintf("printer %s had %d tasks ahead of this one", l.name, len(l.queue))
}

func (l *lane) timeout(e *entry, reason, msg string) {
	if l.move(e, spool.StateTimedOut, spool.Change{Reason: reason, Message: msg}) {
		l.a.m.IncTimeout(l.name, reason)
	}
}

// remove takes taskNo out of whichever list holds it.
func (l *lane) remove(taskNo string) *entry {
	if e, ok := l.waiting[taskNo]; ok {
		delete(l.waiting, taskNo)
		l.a.push.Cancel("retry:" + taskNo)
		return e
	}
	for _, list := range []*[]*entry{&l.queue, &l.parked} {
		for i, e := range *list {
			if e.task.TaskNo == taskNo {
				*list = slices.Delete(*list, i, i+1)
				return e
			}
		}
	}
	return nil
}

func (l *lane) cancel(m msgCancel) {
	if l.inflight != nil && l.inflight.task.TaskNo == m.taskNo {
		m.reply <- cancelResult{err: fmt.Errorf("%w: task %s is being printed", localapi.ErrConflict, m.taskNo)}
		return
	}
	e := l.remove(m.taskNo)
	if e == nil {
		m.reply <- cancelResult{err: fmt.Errorf("%w: task %s is not waiting in lane %s", localapi.ErrConflict, m.taskNo, l.name)}
		return
	}
	t, err := l.a.spool.Transition(m.taskNo, e.task.State, spool.StateCanceled, spool.Change{Reason: "canceled"})
	if err != nil {
		// Put it back: the task is still ours and still waiting.
		l.receive(e.task)
		m.reply <- cancelResult{err: fmt.Errorf("%w: %v", localapi.ErrConflict, err)}
		return
	}
	l.log.Info("task CANCELED", "task_no", m.taskNo)
	l.a.dropOwner(m.taskNo)
	l.a.deadlines.Cancel(m.taskNo)
	m.reply <- cancelResult{task: t}
}

// publish shares the lane's state with the monitor, the API and metrics.
func (l *lane) publish() {
	n := len(l.queue) + len(l.parked)
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
