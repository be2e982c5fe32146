package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"printgate/sync/wire"
)

// The hub's own states of a job, beside the agent's (docs/STATES.md),
// which a job takes from the agent's job_ack and events.
const (
	// StateStored: on the hub's disk, no agent has acknowledged it yet. It
	// is pushed to the store's agent whenever one is connected.
	StateStored = "STORED"
	// StateRejected: the agent refused it (Task.Error has its code); it
	// is not sent again.
	StateRejected = "REJECTED"
	// StateExpired: no agent acknowledged it before its deadline (Reason
	// says whether it was ever sent); it is not sent again. A job_ack or
	// events that come after all the same replace it with the agent's
	// state: the agent's word is the truth of what printed.
	StateExpired = "EXPIRED"
)

// Reasons of StateExpired.
const (
	// ReasonAgentOffline: the job was never sent: the store's agent did
	// not connect before the deadline.
	ReasonAgentOffline = "AGENT_OFFLINE"
	// ReasonNoAck: the job was sent, and no job_ack came before the
	// deadline (the agent may still have it: watch for its events).
	ReasonNoAck = "NO_ACK"
)

// MaxTimeline bounds the entries a task's timeline keeps. A printed cloud
// job has about five; a task that fails over, parks and retries for a day
// a few dozen. Past the bound, events still move the state (when newer)
// and are counted in Task.Dropped.
const MaxTimeline = 256

// pendingMarkerTTL is how long the marker of an acknowledged pending job
// stays in hub_pending: long enough for any reader that listed the key to
// see it gone, short enough that markers do not fill the bucket.
const pendingMarkerTTL = time.Minute

// Task is the hub's record of one job of a store: submitted through the
// API, or reported by the agent's events (a LAN, raw or manager job). Its
// state is the hub's (StateStored, StateRejected) until the agent reports
// one.
type Task struct {
	Store             string        `json:"store"`
	Tenant            string        `json:"tenant"`
	TaskNo            string        `json:"task_no"`
	State             string        `json:"state"`
	Reason            string        `json:"reason,omitempty"`
	Error             *wire.Problem `json:"error,omitempty"`
	Printer           string        `json:"printer,omitempty"`
	Target            string        `json:"target,omitempty"`
	Confirmation      string        `json:"confirmation,omitempty"`
	Attempts          int           `json:"attempts"`
	PossibleDuplicate bool          `json:"possible_duplicate,omitempty"`
	Origin            string        `json:"origin,omitempty"`
	// SHA256 is the hex digest of the submitted payload or document (of
	// the job summary for an agent-reported task), for the duplicate check.
	SHA256    string    `json:"sha256,omitempty"`
	Submitted time.Time `json:"submitted,omitzero"`
	Acked     time.Time `json:"acked,omitzero"`
	AckResult string    `json:"ack_result,omitempty"`
	Updated   time.Time `json:"updated"`
	// LastN is the highest event n applied of the life LastSeq: a task_no
	// accepted again after the agent's dedupe window is a new life, told
	// apart by the events' seq (PROTOCOL §5), whose n start again at 1.
	LastN    int     `json:"last_n,omitempty"`
	LastSeq  uint64  `json:"last_seq,omitempty"`
	Timeline []Entry `json:"timeline"`
	// Dropped counts events past MaxTimeline.
	Dropped int `json:"dropped,omitempty"`
	// Outbox holds the webhook messages of this record's state changes
	// not yet queued to the tenant's endpoints: written with the change,
	// so a hub killed after the change still sends them, and emptied by
	// the fan-out (RunOutbox) once their deliveries are queued.
	Outbox []Message `json:"outbox,omitempty"`
	// OutboxDropped counts messages dropped from a full outbox.
	OutboxDropped int `json:"outbox_dropped,omitempty"`
	// Job is the submitted job, kept until the agent acknowledges it
	// (then only its fields without the body stay: the body has reached
	// the agent's disk).
	Job *wire.Job `json:"job,omitempty"`
}

// Entry is one step of a task's timeline: an agent event (N from 1), or a
// step of the hub's own (N 0: stored, rejected).
type Entry struct {
	// Seq is the life of the task_no the event belongs to (PROTOCOL §5),
	// 0 from an agent that sends none.
	Seq               uint64    `json:"seq,omitempty"`
	N                 int       `json:"n"`
	State             string    `json:"state"`
	Reason            string    `json:"reason,omitempty"`
	Printer           string    `json:"printer,omitempty"`
	Target            string    `json:"target,omitempty"`
	Confirmation      string    `json:"confirmation,omitempty"`
	Attempts          int       `json:"attempts"`
	PossibleDuplicate bool      `json:"possible_duplicate,omitempty"`
	At                time.Time `json:"at"`
}

// pendingMark is the value of a hub_pending key.
type pendingMark struct {
	Submitted time.Time `json:"submitted"`
	// Deadline is when the job expires if no agent acknowledged it.
	Deadline time.Time `json:"deadline"`
	// Sent says the job went out on a connection at least once.
	Sent bool `json:"sent,omitempty"`
}

// Submit stores a new job of a store: its record (state STORED, with the
// body) created with Create, which makes the task_no dedupe permanent for
// the retention window, then its pending mark. It returns once both are on
// disk. A task_no the store already has (submitted, or reported by the
// agent) is ErrDuplicate with the stored task, whatever its state; nothing
// is written then, except the pending mark a crash between the two writes
// may have left out (the job was never answered 202, and this resend
// completes it).
//
// The job expires (StateExpired) if no agent acknowledged it by now plus
// its timeout, or plus Options.ExpireAfter for a job without one. A new
// job past the store's or the tenant's bound on records is refused with a
// *QuotaError (ErrQuota).
func (s *Store) Submit(ctx context.Context, st StoreInfo, job wire.Job, sha256 string, now time.Time) (Task, error) {
	key := taskKey(st.ID, job.TaskNo)
	t := Task{
		Store: st.ID, Tenant: st.Tenant, TaskNo: job.TaskNo, State: StateStored,
		Printer: job.Printer, Origin: "cloud", SHA256: sha256, Submitted: now, Updated: now,
		Timeline: []Entry{{State: StateStored, Printer: job.Printer, At: now}},
		Job:      &job,
	}
	if err := s.checkQuota(ctx, st, now); err != nil {
		// A task_no already stored is its duplicate, quota or not.
		if _, gerr := s.tasks.Get(ctx, key); gerr == nil {
			return s.duplicate(ctx, key)
		}
		return Task{}, fmt.Errorf("store: submit %s/%s: %w", st.ID, job.TaskNo, err)
	}
	s.addOutbox(ctx, &t, now, taskData(t))
	if _, err := s.tasks.Create(ctx, key, mustJSON(t)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return s.duplicate(ctx, key)
		}
		return Task{}, fmt.Errorf("store: submit %s/%s: %w", st.ID, job.TaskNo, kvErr(err))
	}
	s.countedJob(st)
	if err := s.markPending(ctx, key, now, s.deadline(job, now)); err != nil {
		return Task{}, fmt.Errorf("store: submit %s/%s: %w", st.ID, job.TaskNo, err)
	}
	crashPoint("state-written")
	s.notifyJob(st.ID, job.TaskNo)
	return t, nil
}

// duplicate answers a Submit of a known key with the stored task, and
// restores a missing pending mark of a job still STORED.
func (s *Store) duplicate(ctx context.Context, key string) (Task, error) {
	var t Task
	if _, err := getJSON(ctx, s.tasks, key, &t); err != nil {
		return t, fmt.Errorf("store: read the stored task %s: %w", key, err)
	}
	if t.State == StateStored && t.Job != nil {
		if _, err := s.pending.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			if err := s.markPending(ctx, key, t.Submitted, s.deadline(*t.Job, t.Submitted)); err != nil {
				return t, err
			}
			s.notifyJob(t.Store, t.TaskNo)
		}
	}
	return t, ErrDuplicate
}

func (s *Store) markPending(ctx context.Context, key string, at, deadline time.Time) error {
	if _, err := s.pending.Put(ctx, key, mustJSON(pendingMark{Submitted: at, Deadline: deadline})); err != nil {
		return fmt.Errorf("pending mark: %w", kvErr(err))
	}
	return nil
}

// deadline is when a job submitted at now expires unacknowledged.
func (s *Store) deadline(job wire.Job, now time.Time) time.Time {
	if d, err := time.ParseDuration(job.Timeout); err == nil && d > 0 {
		return now.Add(d)
	}
	return now.Add(s.opts.ExpireAfter)
}

// MarkSent records that a pending job went out on a connection, so its
// expiry can say NO_ACK rather than AGENT_OFFLINE. A job no longer pending
// (acknowledged meanwhile) is left alone: the write is compare-and-set on
// the mark read.
func (s *Store) MarkSent(ctx context.Context, store, taskNo string) error {
	key := taskKey(store, taskNo)
	e, err := s.pending.Get(ctx, key)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil
		}
		return fmt.Errorf("store: mark %s/%s sent: %w", store, taskNo, kvErr(err))
	}
	var m pendingMark
	if err := json.Unmarshal(e.Value(), &m); err != nil || m.Sent {
		return nil
	}
	m.Sent = true
	if _, err := s.pending.Update(ctx, key, mustJSON(m), e.Revision()); err != nil &&
		!errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("store: mark %s/%s sent: %w", store, taskNo, kvErr(err))
	}
	return nil
}

// ExpireDue expires every pending job whose deadline is not after now: its
// state becomes StateExpired with ReasonAgentOffline (never sent) or
// ReasonNoAck, its body and pending mark are dropped, and it is not sent
// again. It returns the jobs it expired. It reads every pending mark (the
// backlog of every store), so it runs every few seconds, not per request.
func (s *Store) ExpireDue(ctx context.Context, now time.Time) ([]Task, error) {
	l, err := s.pending.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list pending jobs: %w", err)
	}
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	l.Stop()
	var out []Task
	for _, key := range keys {
		e, err := s.pending.Get(ctx, key)
		if err != nil {
			continue // acknowledged meanwhile
		}
		var m pendingMark
		if err := json.Unmarshal(e.Value(), &m); err != nil || m.Deadline.IsZero() || now.Before(m.Deadline) {
			continue
		}
		reason := ReasonAgentOffline
		if m.Sent {
			reason = ReasonNoAck
		}
		var expired Task
		err = s.update(ctx, key, func(t *Task, found bool) bool {
			if !found || t.AckResult != "" || t.State != StateStored {
				return false
			}
			t.State, t.Reason, t.Updated = StateExpired, reason, now
			t.Timeline = append(t.Timeline, Entry{State: StateExpired, Reason: reason, Printer: t.Printer, At: now})
			if t.Job != nil {
				j := *t.Job
				j.Payload, j.Document = nil, nil
				t.Job = &j
			}
			s.addOutbox(ctx, t, now, taskData(*t))
			expired = *t
			return true
		})
		if err != nil {
			return out, fmt.Errorf("store: expire %s: %w", key, err)
		}
		if err := s.pending.Purge(ctx, key, jetstream.PurgeTTL(pendingMarkerTTL), jetstream.LastRevision(e.Revision())); err != nil &&
			!errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return out, fmt.Errorf("store: expire %s: clear the pending mark: %w", key, kvErr(err))
		}
		if expired.TaskNo != "" {
			out = append(out, expired)
		}
	}
	return out, nil
}

// Task returns a store's task by task_no, or ErrNotFound.
func (s *Store) Task(ctx context.Context, store, taskNo string) (Task, error) {
	var t Task
	_, err := getJSON(ctx, s.tasks, taskKey(store, taskNo), &t)
	return t, err
}

// Pending returns the task_nos of a store's jobs no agent has acknowledged,
// oldest first (in the order their marks were written). It reads by the
// filter "<store>.>" with an ephemeral ordered consumer, never a durable
// one.
func (s *Store) Pending(ctx context.Context, store string) ([]string, error) {
	l, err := s.pending.ListKeysFiltered(ctx, store+".>")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("store: pending jobs of %s: %w", store, err)
	}
	defer l.Stop()
	var out []string
	for {
		select {
		case k, ok := <-l.Keys():
			if !ok {
				return out, nil
			}
			out = append(out, taskNoOfKey(k))
		case <-ctx.Done():
			return nil, fmt.Errorf("store: pending jobs of %s: %w", store, ctx.Err())
		}
	}
}

// PendingJob returns the job to send for a pending task_no. ErrNotFound
// when it is no longer pending (acknowledged meanwhile, or its record
// expired).
func (s *Store) PendingJob(ctx context.Context, store, taskNo string) (wire.Job, error) {
	t, err := s.Task(ctx, store, taskNo)
	if err != nil {
		return wire.Job{}, err
	}
	// Until its job_ack, a job is sent again on every connection, even when
	// the agent's events (replayed before the lost ack) already moved its
	// state; only an expired job, whose body is gone, is not.
	if t.Job == nil || t.AckResult != "" || t.State == StateExpired {
		return wire.Job{}, ErrNotFound
	}
	return *t.Job, nil
}

// ApplyAck records a job_ack of a store's agent: the result, the state
// (rejected: StateRejected and the code; accepted or duplicate: the
// agent's state, unless its events already told a newer one), and drops
// the body and the pending mark, so the job is never sent again. It
// returns once that is on disk. An ack for a task_no the hub never sent
// changes nothing.
func (s *Store) ApplyAck(ctx context.Context, store string, ack wire.JobAck, now time.Time) error {
	key := taskKey(store, ack.TaskNo)
	err := s.update(ctx, key, func(t *Task, found bool) bool {
		// The first ack decides; a later one (a resend answered
		// duplicate) changes nothing.
		if !found || t.Job == nil || t.AckResult != "" {
			return false
		}
		before := t.State
		t.AckResult, t.Acked = ack.Result, now
		switch {
		case ack.Result == wire.ResultRejected:
			t.State, t.Error = StateRejected, ack.Error
			code := ""
			if ack.Error != nil {
				code = ack.Error.Code
			}
			t.Timeline = append(t.Timeline, Entry{State: StateRejected, Reason: code, Printer: t.Printer, At: now})
		case t.LastN == 0 && ack.State != "":
			t.State, t.Reason = string(ack.State), ""
		}
		if t.Job != nil {
			j := *t.Job
			j.Payload, j.Document = nil, nil
			t.Job = &j
		}
		t.Updated = now
		if t.State != before {
			s.addOutbox(ctx, t, now, taskData(*t))
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("store: job_ack %s/%s: %w", store, ack.TaskNo, err)
	}
	// Only a mark that is there is cleared: a purge writes a marker, and
	// an ack for a task_no with no pending job (never sent, already
	// acknowledged, a task the agent reported) must write nothing, or an
	// agent's acks could fill the bucket every store's submits share.
	if _, err := s.pending.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil
	} else if err != nil {
		return fmt.Errorf("store: job_ack %s/%s: read the pending mark: %w", store, ack.TaskNo, kvErr(err))
	}
	if err := s.pending.Purge(ctx, key, jetstream.PurgeTTL(pendingMarkerTTL)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("store: job_ack %s/%s: clear the pending mark: %w", store, ack.TaskNo, kvErr(err))
	}
	return nil
}

// ApplyEvents folds a store's agent events of one task into its record,
// each (store, task_no, seq, n) once, gaps in n tolerated; an unknown task_no
// (a LAN, raw or manager job) gets a record of its own. It returns how
// the events that were new, in their order in evs, once they are on disk.
// evs all have taskNo.
func (s *Store) ApplyEvents(ctx context.Context, st StoreInfo, taskNo string, evs []wire.Event, now time.Time) ([]wire.Event, error) {
	key := taskKey(st.ID, taskNo)
	var added []wire.Event
	var changes []MessageData
	err := s.update(ctx, key, func(t *Task, found bool) bool {
		added, changes = added[:0], changes[:0]
		if !found {
			*t = Task{Store: st.ID, Tenant: st.Tenant, TaskNo: taskNo, Timeline: []Entry{}}
		}
		type life struct {
			seq uint64
			n   int
		}
		later := func(seq uint64, n int) bool { return seq > t.LastSeq || seq == t.LastSeq && n > t.LastN }
		have := make(map[life]bool, len(t.Timeline))
		for _, e := range t.Timeline {
			if e.N > 0 {
				have[life{e.Seq, e.N}] = true
			}
		}
		for _, ev := range evs {
			k := life{ev.Seq, ev.N}
			if have[k] || len(t.Timeline) >= MaxTimeline && !later(ev.Seq, ev.N) {
				continue
			}
			have[k] = true
			added = append(added, ev)
			if t.Origin == "" {
				t.Origin = string(ev.Origin)
			}
			if ev.Job != nil && t.SHA256 == "" {
				t.SHA256 = ev.Job.SHA256
			}
			if len(t.Timeline) < MaxTimeline {
				t.Timeline = append(t.Timeline, Entry{Seq: ev.Seq, N: ev.N, State: string(ev.State), Reason: ev.Reason, Printer: ev.Printer,
					Target: ev.Target, Confirmation: string(ev.Confirmation), Attempts: ev.Attempts,
					PossibleDuplicate: ev.PossibleDuplicate, At: ev.At})
			} else {
				t.Dropped++
			}
			if later(ev.Seq, ev.N) {
				t.LastN, t.LastSeq = ev.N, ev.Seq
				t.State, t.Reason, t.Printer, t.Target = string(ev.State), ev.Reason, ev.Printer, ev.Target
				t.Confirmation, t.Attempts, t.PossibleDuplicate = string(ev.Confirmation), ev.Attempts, ev.PossibleDuplicate
				t.Error = nil
				changes = append(changes, MessageData{State: string(ev.State), Reason: ev.Reason, Printer: ev.Printer,
					Target: ev.Target, Confirmation: string(ev.Confirmation), Attempts: ev.Attempts,
					PossibleDuplicate: ev.PossibleDuplicate, Origin: string(ev.Origin), Seq: ev.Seq, N: ev.N, At: ev.At})
			}
		}
		if len(added) == 0 {
			return false
		}
		slices.SortStableFunc(t.Timeline, func(a, b Entry) int {
			if a.Seq != b.Seq {
				return cmp.Compare(a.Seq, b.Seq)
			}
			return a.N - b.N
		})
		t.Updated = now
		s.addOutbox(ctx, t, now, changes...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("store: events of %s/%s: %w", st.ID, taskNo, err)
	}
	for _, c := range changes {
		crashPoint("events-written:" + c.State)
	}
	return added, nil
}

// update applies change to the record at key by compare-and-set on the
// revision read, retrying on a concurrent write. change reports whether
// there is anything to write; found is false for a key with no record
// (then a write creates it).
func (s *Store) update(ctx context.Context, key string, change func(t *Task, found bool) bool) error {
	_, err := casJSON(ctx, s.tasks, key, func(t *Task, found bool) (bool, error) { return change(t, found), nil })
	return err
}

// maxListScan bounds the records one ListTasks call reads; past it the
// call returns what it found and a cursor to go on from.
const maxListScan = 5000

// ListTasks returns a store's tasks in task_no order (bytewise), those
// after the task_no after, in the states given (all when none), at most
// limit. next is the task_no to pass as after for the rest, "" at the end.
func (s *Store) ListTasks(ctx context.Context, store, after string, states []string, limit int) (tasks []Task, next string, err error) {
	l, err := s.tasks.ListKeysFiltered(ctx, store+".>")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("store: list tasks of %s: %w", store, err)
	}
	var nos []string
	for k := range l.Keys() {
		if no := taskNoOfKey(k); no > after {
			nos = append(nos, no)
		}
	}
	l.Stop()
	slices.Sort(nos)
	for i, no := range nos {
		if len(tasks) == limit || i == maxListScan {
			return tasks, nos[i-1], nil
		}
		t, err := s.Task(ctx, store, no)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if len(states) == 0 || slices.Contains(states, t.State) {
			t.Job = nil
			tasks = append(tasks, t)
		}
	}
	return tasks, "", nil
}
