package cloudtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"

	"printgate/sync/wire"
)

// agent is everything the cloud records about one agent id.
type agent struct {
	id      string
	jobs    []*queuedJob // not yet acknowledged, in queue order
	events  []wire.Event
	seen    map[eventKey]struct{}
	dropped int // events forgotten to stay under MaxEvents
	dupes   int // events received again and not recorded
	batches int // events frames stored
	// acksDropped counts events batches stored without an events_ack
	// (Options.DropEventsAck).
	acksDropped int
	acks        []wire.JobAck
	results     []wire.CommandResult
	logs        []wire.LogLines
	errs        []wire.Error
	pushes      [][]wire.Printer // hello's printers, then every printers frame
	hello       *wire.Hello
	sess        *session // the connection that finished its hello, or nil
	connects    int
	refused     int // frames from the agent answered with an error frame
	lastDrop    string
}

// eventKey is an event as the cloud dedupes it (PROTOCOL.md §5): seq
// tells the lives of a task_no apart.
type eventKey struct {
	taskNo string
	seq    uint64
	n      int
}

type queuedJob struct {
	job   wire.Job
	frame []byte
	sends int
}

// renumber gives q a new task_no, as Breakage.RenumberResent does to a
// job it resends.
func (q *queuedJob) renumber() {
	q.job.TaskNo += "_r"
	if frame, err := wire.Encode(&q.job); err == nil {
		q.frame = frame
	}
}

// QueuedJob is a job the agent has not acknowledged yet, with how many
// times it was handed to a connection (more than once after a reconnect).
type QueuedJob struct {
	Job   wire.Job `json:"job"`
	Sends int      `json:"sends"`
}

// AgentInfo is what GET /api/agents says of one agent.
type AgentInfo struct {
	AgentID   string `json:"agent_id"`
	Connected bool   `json:"connected"`
	// Connects counts connections that finished their hello.
	Connects int    `json:"connects"`
	Version  string `json:"version,omitempty"`
	// Printers are the latest printer states (hello or printers frame).
	Printers   []wire.Printer `json:"printers"`
	Outbox     int            `json:"outbox"` // as the last hello said
	QueuedJobs int            `json:"queued_jobs"`
	Events     int            `json:"events"`
	// EventsDropped counts events forgotten to stay under MaxEvents.
	EventsDropped int `json:"events_dropped"`
	// DuplicateEvents counts events received again and not recorded.
	DuplicateEvents int `json:"duplicate_events"`
	Batches         int `json:"batches"`
	// AcksDropped counts events batches stored without an events_ack, on
	// purpose (Options.DropEventsAck).
	AcksDropped int `json:"acks_dropped"`
	Acks        int `json:"acks"`
	// RefusedFrames counts frames answered with an error frame.
	RefusedFrames  int    `json:"refused_frames"`
	LastDisconnect string `json:"last_disconnect,omitempty"`
}

func (a *agent) info() AgentInfo {
	in := AgentInfo{
		AgentID: a.id, Connected: a.sess != nil, Connects: a.connects,
		Printers: []wire.Printer{}, QueuedJobs: len(a.jobs), Events: len(a.events),
		EventsDropped: a.dropped, DuplicateEvents: a.dupes, Batches: a.batches, AcksDropped: a.acksDropped,
		Acks: len(a.acks), RefusedFrames: a.refused, LastDisconnect: a.lastDrop,
	}
	if a.hello != nil {
		in.Version, in.Outbox = a.hello.Version, a.hello.Outbox
	}
	if n := len(a.pushes); n > 0 {
		in.Printers = slices.Clone(a.pushes[n-1])
	}
	return in
}

// agentLocked returns the record of id, making it. c.mu must be held.
func (c *Cloud) agentLocked(id string) *agent {
	a, ok := c.agents[id]
	if !ok {
		a = &agent{id: id, seen: map[eventKey]struct{}{}}
		c.agents[id] = a
	}
	return a
}

// appendBounded appends v to list and drops the oldest beyond max.
func appendBounded[T any](list []T, max int, v ...T) []T {
	list = append(list, v...)
	if over := len(list) - max; over > 0 {
		list = slices.Delete(list, 0, over)
	}
	return list
}

// Queue queues a job for agentID. It is pushed at once if the agent is
// connected, and again on every later connection until the agent answers
// job_ack (whatever the result). Queueing a task_no again sends it again
// (the agent dedupes). It fails with a *wire.FrameError for a job wire
// would refuse, and with ErrQueueFull.
func (c *Cloud) Queue(agentID string, job wire.Job) error {
	job.Payload = bytes.Clone(job.Payload)
	job.Document = bytes.Clone(job.Document)
	frame, err := wire.Encode(&job)
	if err != nil {
		return fmt.Errorf("cloudtest: queue job for agent %s: %w", agentID, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("cloudtest: queue job for agent %s: %w", agentID, ErrClosed)
	}
	a := c.agentLocked(agentID)
	if len(a.jobs) >= c.opts.MaxQueuedJobs {
		return fmt.Errorf("cloudtest: queue job %s for agent %s: %d jobs wait for an ack: %w",
			job.TaskNo, agentID, len(a.jobs), ErrQueueFull)
	}
	q := &queuedJob{job: job, frame: frame}
	a.jobs = append(a.jobs, q)
	if a.sess != nil {
		q.sends++
		a.sess.sendLocked(frame)
		if c.opts.Broken.DropJobOnSend {
			a.jobs = a.jobs[:len(a.jobs)-1]
		}
	}
	c.notify()
	return nil
}

// Jobs returns agentID's jobs not yet acknowledged, in queue order.
func (c *Cloud) Jobs(agentID string) []QueuedJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.agents[agentID]
	if !ok {
		return nil
	}
	out := make([]QueuedJob, len(a.jobs))
	for i, q := range a.jobs {
		out[i] = QueuedJob{Job: q.job, Sends: q.sends}
	}
	return out
}

// Acks returns agentID's job_ack frames in arrival order.
func (c *Cloud) Acks(agentID string) []wire.JobAck {
	return read(c, agentID, func(a *agent) []wire.JobAck { return slices.Clone(a.acks) })
}

// Events returns agentID's events in arrival order, each (task_no, n)
// once.
func (c *Cloud) Events(agentID string) []wire.Event {
	return read(c, agentID, func(a *agent) []wire.Event { return slices.Clone(a.events) })
}

// Gap is a run of event numbers missing in a task's recorded events: the
// agent's outbox dropped them (its cap, a salvaged spool, PROTOCOL.md §5),
// or they are still on their way. From and To are the first and last
// missing n.
type Gap struct {
	TaskNo string `json:"task_no"`
	From   int    `json:"from"`
	To     int    `json:"to"`
}

// Gaps returns the gaps in n of agentID's recorded events, by task_no then
// n: numbers below a task's first recorded one, and between two recorded
// ones.
func (c *Cloud) Gaps(agentID string) []Gap {
	evs := c.Events(agentID)
	byTask := map[string][]int{}
	for _, ev := range evs {
		byTask[ev.TaskNo] = append(byTask[ev.TaskNo], ev.N)
	}
	tasks := make([]string, 0, len(byTask))
	for t := range byTask {
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	var out []Gap
	for _, t := range tasks {
		ns := byTask[t]
		slices.Sort(ns)
		ns = slices.Compact(ns)
		prev := 0
		for _, n := range ns {
			if n > prev+1 {
				out = append(out, Gap{TaskNo: t, From: prev + 1, To: n - 1})
			}
			prev = n
		}
	}
	return out
}

// Results returns agentID's command_result frames in arrival order.
func (c *Cloud) Results(agentID string) []wire.CommandResult {
	return read(c, agentID, func(a *agent) []wire.CommandResult { return slices.Clone(a.results) })
}

// LogLines returns the lines agentID sent for the logs_tail with id, in
// arrival order.
func (c *Cloud) LogLines(agentID, id string) []string {
	return read(c, agentID, func(a *agent) []string {
		var out []string
		for _, l := range a.logs {
			if l.ID == id {
				out = append(out, l.Lines...)
			}
		}
		return out
	})
}

// ErrorFrames returns the error frames agentID sent (the agent refusing
// something the cloud sent), in arrival order.
func (c *Cloud) ErrorFrames(agentID string) []wire.Error {
	return read(c, agentID, func(a *agent) []wire.Error { return slices.Clone(a.errs) })
}

// Printers returns agentID's latest printer states: from its last printers
// frame, else its hello.
func (c *Cloud) Printers(agentID string) []wire.Printer {
	return read(c, agentID, func(a *agent) []wire.Printer {
		if len(a.pushes) == 0 {
			return nil
		}
		return slices.Clone(a.pushes[len(a.pushes)-1])
	})
}

// PrinterPushes returns every printer list agentID reported, its hellos
// and printers frames, in arrival order.
func (c *Cloud) PrinterPushes(agentID string) [][]wire.Printer {
	return read(c, agentID, func(a *agent) [][]wire.Printer {
		out := make([][]wire.Printer, len(a.pushes))
		for i, p := range a.pushes {
			out[i] = slices.Clone(p)
		}
		return out
	})
}

// Hello returns agentID's last hello, if any.
func (c *Cloud) Hello(agentID string) (wire.Hello, bool) {
	h := read(c, agentID, func(a *agent) *wire.Hello { return a.hello })
	if h == nil {
		return wire.Hello{}, false
	}
	out := *h
	out.Printers = slices.Clone(h.Printers)
	return out, true
}

// Connected reports whether agentID has a connection that finished its
// hello.
func (c *Cloud) Connected(agentID string) bool {
	return read(c, agentID, func(a *agent) bool { return a.sess != nil })
}

// ConnectCount counts agentID's connections that finished their hello.
func (c *Cloud) ConnectCount(agentID string) int {
	return read(c, agentID, func(a *agent) int { return a.connects })
}

// WaitEvents waits until agentID has at least n recorded events and
// returns them all.
func (c *Cloud) WaitEvents(ctx context.Context, agentID string, n int) ([]wire.Event, error) {
	var out []wire.Event
	err := c.Wait(ctx, func() bool { out = c.Events(agentID); return len(out) >= n })
	if err != nil {
		return out, fmt.Errorf("cloudtest: agent %s: %d of %d events: %w", agentID, len(out), n, err)
	}
	return out, nil
}

// WaitAcks waits until agentID sent at least n job_ack frames and returns
// them all.
func (c *Cloud) WaitAcks(ctx context.Context, agentID string, n int) ([]wire.JobAck, error) {
	var out []wire.JobAck
	err := c.Wait(ctx, func() bool { out = c.Acks(agentID); return len(out) >= n })
	if err != nil {
		return out, fmt.Errorf("cloudtest: agent %s: %d of %d job acks: %w", agentID, len(out), n, err)
	}
	return out, nil
}

// WaitConnected waits until agentID is connected (connected true) or not
// (false).
func (c *Cloud) WaitConnected(ctx context.Context, agentID string, connected bool) error {
	if err := c.Wait(ctx, func() bool { return c.Connected(agentID) == connected }); err != nil {
		return fmt.Errorf("cloudtest: agent %s connected=%v: %w", agentID, connected, err)
	}
	return nil
}

// WaitResult waits for agentID's command_result with id.
func (c *Cloud) WaitResult(ctx context.Context, agentID, id string) (wire.CommandResult, error) {
	var out wire.CommandResult
	err := c.Wait(ctx, func() bool {
		for _, r := range c.Results(agentID) {
			if r.ID == id {
				out = r
				return true
			}
		}
		return false
	})
	if err != nil {
		return out, fmt.Errorf("cloudtest: agent %s: command_result %s: %w", agentID, id, err)
	}
	return out, nil
}

// WaitLogLines waits until agentID sent at least n lines for the
// logs_tail with id and returns them all.
func (c *Cloud) WaitLogLines(ctx context.Context, agentID, id string, n int) ([]string, error) {
	var out []string
	err := c.Wait(ctx, func() bool { out = c.LogLines(agentID, id); return len(out) >= n })
	if err != nil {
		return out, fmt.Errorf("cloudtest: agent %s: %d of %d log lines for %s: %w", agentID, len(out), n, id, err)
	}
	return out, nil
}

// Send sends a command (*wire.Reprint, *wire.Cancel, *wire.LogsTail or
// *wire.LogsStop) to agentID's connection. It fails with ErrNotCommand,
// a *wire.FrameError for a message wire would refuse, or ErrNotConnected.
// Answers are read with Results, WaitResult, LogLines and WaitLogLines.
func (c *Cloud) Send(agentID string, m wire.Message) error {
	switch m.(type) {
	case *wire.Reprint, *wire.Cancel, *wire.LogsTail, *wire.LogsStop:
	default:
		return fmt.Errorf("cloudtest: send to agent %s: %T: %w", agentID, m, ErrNotCommand)
	}
	frame, err := wire.Encode(m)
	if err != nil {
		return fmt.Errorf("cloudtest: send to agent %s: %w", agentID, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.agents[agentID]
	if !ok || a.sess == nil {
		return fmt.Errorf("cloudtest: send %s to agent %s: %w", m.Type(), agentID, ErrNotConnected)
	}
	a.sess.sendLocked(frame)
	return nil
}

// read runs f on agentID's record under the lock; the zero value if the
// agent is unknown.
func read[T any](c *Cloud, agentID string, f func(*agent) T) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.agents[agentID]
	if !ok {
		var zero T
		return zero
	}
	return f(a)
}

// randomString is n random bytes, base64url without padding.
func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand documents it)
	return base64.RawURLEncoding.EncodeToString(b)
}
