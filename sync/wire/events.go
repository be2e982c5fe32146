package wire

import (
	"fmt"
	"time"

	"printgate/taskdef"
)

// Events is a batch of outbox events in the wire form of §5. Requires batch, the id the cloud echoes in events_ack, and
// at least one event. Each event requires task_no, n of 1 or more and a
// known state; attempts is 0 or more; confirmation and origin, when set,
// are known values; a job summary requires printer, a size of 0 or more
// and a sha256 of 64 lowercase hex digits. The other fields of an event
// are the agent's own record and may be empty: Encode refusing one event
// would hold back every batch behind it. Decode and Encode do not check
// the order (see Ordered): the cloud dedupes by (task_no, seq, n), so a
// batch out of order is still safe to store.
type Events struct {
	Batch  string  `json:"batch"`
	Events []Event `json:"events"`
}

// Event is one state change of a task as §5 sends it to the cloud. It is
// the wire's own type, not the spool's record, so that a field added to
// the spool's outbox event reaches the cloud only when §5 and this type
// say so; the link converts each outbox event into one of these.
type Event struct {
	TaskNo            string               `json:"task_no"`
	N                 int                  `json:"n"`
	State             taskdef.State        `json:"state"`
	Reason            string               `json:"reason,omitempty"`
	Printer           string               `json:"printer"`
	Target            string               `json:"target,omitempty"`
	Confirmation      taskdef.Confirmation `json:"confirmation,omitempty"`
	Attempts          int                  `json:"attempts"`
	PossibleDuplicate bool                 `json:"possible_duplicate,omitempty"`
	Origin            taskdef.Origin       `json:"origin"`
	At                time.Time            `json:"at"`
	Job               *JobInfo             `json:"job,omitempty"`
	// Seq is the task's accept sequence (§3 seq), which tells the lives
	// of a task_no apart: one accepted again after its dedupe window is a
	// new task, with a new seq, whose events count from n 1 again (or past
	// its old life's still in the outbox). The cloud dedupes by (task_no,
	// seq, n). Absent (0) when unknown, and from agents before it.
	Seq uint64 `json:"seq,omitempty"`
}

// JobInfo is an event's summary of a locally submitted task, without its
// body: what the cloud needs to know about a job it did not send.
type JobInfo struct {
	Printer  string           `json:"printer"`
	Priority taskdef.Priority `json:"priority"`
	Origin   taskdef.Origin   `json:"origin"`
	Size     int              `json:"size"`
	SHA256   string           `json:"sha256"`
}

// EventsAck tells the agent a batch is stored and may leave the outbox.
// Requires batch.
type EventsAck struct {
	Batch string `json:"batch"`
}

// Type is "events".
func (*Events) Type() string { return TypeEvents }

// Type is "events_ack".
func (*EventsAck) Type() string { return TypeEventsAck }

func (m *Events) frame() any {
	return &struct {
		Type string `json:"type"`
		*Events
	}{TypeEvents, m}
}

func (m *EventsAck) frame() any {
	return &struct {
		Type string `json:"type"`
		*EventsAck
	}{TypeEventsAck, m}
}

func (m *EventsAck) check() *FrameError { return required("batch", m.Batch) }

// Ordered reports whether the batch is in the order of §5: by task_no
// (compared bytewise, as the outbox keys sort), then by n, with no
// (task_no, n) twice. The error wraps ErrUnordered and names the first
// event out of place.
func (e Events) Ordered() error {
	for i := 1; i < len(e.Events); i++ {
		prev, cur := &e.Events[i-1], &e.Events[i]
		if prev.TaskNo < cur.TaskNo || (prev.TaskNo == cur.TaskNo && prev.N < cur.N) {
			continue
		}
		how := "comes after"
		if prev.TaskNo == cur.TaskNo && prev.N == cur.N {
			how = "repeats"
		}
		return fmt.Errorf("batch %s: events[%d] (task_no %s, n %d) %s events[%d] (task_no %s, n %d); a batch is ordered by task_no then n: %w",
			quote(e.Batch), i, quote(cur.TaskNo), cur.N, how, i-1, quote(prev.TaskNo), prev.N, ErrUnordered)
	}
	return nil
}

func (m *Events) check() *FrameError {
	if e := required("batch", m.Batch); e != nil {
		return e
	}
	if len(m.Events) == 0 {
		return invalid("events", "is required: a batch has at least one event")
	}
	for i := range m.Events {
		if e := checkEvent(fmt.Sprintf("events[%d].", i), &m.Events[i]); e != nil {
			return e
		}
	}
	return nil
}

func checkEvent(at string, ev *Event) *FrameError {
	if e := required(at+"task_no", ev.TaskNo); e != nil {
		return e
	}
	if ev.N < 1 {
		return invalid(at+"n", fmt.Sprintf("is %d; events of a task are numbered from 1", ev.N))
	}
	if e := checkState(at+"state", ev.State); e != nil {
		return e
	}
	if ev.Attempts < 0 {
		return invalid(at+"attempts", fmt.Sprintf("is %d; it counts attempts, 0 or more", ev.Attempts))
	}
	if e := oneOf(at+"confirmation", ev.Confirmation, true, taskdef.ConfirmPrinted, taskdef.ConfirmConsumed, taskdef.ConfirmDelivered); e != nil {
		return e
	}
	if e := checkOrigin(at+"origin", ev.Origin); e != nil {
		return e
	}
	if j := ev.Job; j != nil {
		at += "job."
		if e := required(at+"printer", j.Printer); e != nil {
			return e
		}
		if e := oneOf(at+"priority", j.Priority, true, taskdef.Priorities()...); e != nil {
			return e
		}
		if e := checkOrigin(at+"origin", j.Origin); e != nil {
			return e
		}
		if j.Size < 0 {
			return invalid(at+"size", fmt.Sprintf("is %d; a size is 0 or more", j.Size))
		}
		if e := required(at+"sha256", j.SHA256); e != nil {
			return e
		}
		if !isSHA256Hex(j.SHA256) {
			return invalid(at+"sha256", "must be 64 lowercase hex digits")
		}
	}
	return nil
}

func checkOrigin(at string, o taskdef.Origin) *FrameError {
	return oneOf(at, o, true, taskdef.Origins()...)
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
