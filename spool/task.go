package spool

import (
	"encoding/json"
	"time"

	"printgate/taskdef"
)

// The words of a task shared with the cloud protocol live in package
// taskdef, a leaf the cloud side can link without the spool; the spool names
// them as its own.

// State is a task's place in the state machine of docs/DESIGN.md, "States"
// (taskdef.State).
type State = taskdef.State

// The task states. Terminal states are PRINTED, TIMED_OUT, FAILED, CANCELED.
const (
	StateAccepted  = taskdef.StateAccepted
	StateQueued    = taskdef.StateQueued
	StateSending   = taskdef.StateSending
	StatePrinted   = taskdef.StatePrinted
	StateRetryWait = taskdef.StateRetryWait
	StateUnknown   = taskdef.StateUnknown
	StateHeld      = taskdef.StateHeld
	StateParked    = taskdef.StateParked
	StateTimedOut  = taskdef.StateTimedOut
	StateFailed    = taskdef.StateFailed
	StateCanceled  = taskdef.StateCanceled
)

// AllStates lists every state, in the order the state machine reads.
var AllStates = taskdef.AllStates

// Priority orders tasks inside a printer's lane (taskdef.Priority).
type Priority = taskdef.Priority

// The priorities. Urgent tasks go first; the lane ages normal ones.
const (
	PriorityUrgent = taskdef.PriorityUrgent
	PriorityNormal = taskdef.PriorityNormal
)

// priorityRank is p's byte in queue keys: lower sorts first.
func priorityRank(p Priority) byte {
	if p == PriorityUrgent {
		return 0
	}
	return 1
}

// Origin says where a task came from (taskdef.Origin).
type Origin = taskdef.Origin

// The origins of docs/DESIGN.md, "The task".
const (
	OriginCloud   = taskdef.OriginCloud
	OriginLocal   = taskdef.OriginLocal
	OriginManager = taskdef.OriginManager
	// OriginRaw is a job a POS printed to a printer's raw port (raw_listen):
	// bytes as a port-9100 printer receives them, with a generated task_no.
	OriginRaw = taskdef.OriginRaw
)

// Origins lists every origin a task may have (taskdef.Origins).
func Origins() []Origin { return taskdef.Origins() }

// Confirmation is how strong the proof of paper was (taskdef.Confirmation).
type Confirmation = taskdef.Confirmation

// The confirmation levels, strongest first.
const (
	ConfirmPrinted   = taskdef.ConfirmPrinted
	ConfirmConsumed  = taskdef.ConfirmConsumed
	ConfirmDelivered = taskdef.ConfirmDelivered
)

// Reasons recorded with TIMED_OUT and FAILED (and free text elsewhere).
const (
	ReasonDeviceOffline = "DEVICE_OFFLINE"
	ReasonNoAck         = "NO_ACK"
	ReasonPaperOut      = "PAPER_OUT"
	ReasonBusy          = "BUSY"
	ReasonInvalid       = "INVALID"
	ReasonRender        = "RENDER"
	ReasonMaxAttempts   = "MAX_ATTEMPTS"
	// ReasonTruncated is on the first timeline entry of a raw job whose
	// connection ended mid-stream (NewTask.Truncated).
	ReasonTruncated = "TRUNCATED"
)

// NewTask is what a submitter hands to Accept.
type NewTask struct {
	TaskNo    string
	Printer   string
	Priority  Priority        // empty means normal
	Origin    Origin          // empty means local
	Payload   []byte          // raw ESC/POS bytes, or
	Document  json.RawMessage // a ticket document rendered for the printer's profile
	Timeout   time.Duration   // zero means the spool's default
	ReprintOf string          // the task this one reprints, if any
	// PossibleDuplicate marks a task that may repeat paper already printed.
	PossibleDuplicate bool
	// Command, when set, is the id of the cloud command this task answers
	// (a reprint): Accept stores the command's result, ok with this task,
	// in the same transaction, so a resend of the command after a crash
	// finds it (CommandResult) and never prints a second copy.
	Command string
	// Truncated marks a raw job whose connection ended mid-stream: what
	// arrived prints, marked INCOMPLETE, and the first timeline entry says
	// TRUNCATED.
	Truncated bool
	// Invalid, when set, is why the door that decoded this task cannot
	// take it: bad base64, a timeout out of range, a cloud frame that
	// breaks the protocol. The agent's intake still answers a task_no
	// already known as the duplicate it is (docs/DESIGN.md, invariant 7) and
	// refuses anything else with an error wrapping Invalid, so the door
	// answers in its own terms. Accept refuses such a task.
	Invalid error
	// Queued, when set, is called once the task is queued for the spool's
	// next commit, before it is fsync'd: a task handed to Accept after
	// that is stored with it or after it, in the same order. A raw port
	// hands over its next job then, so a burst shares commits.
	Queued func()
}

// Task is a task as stored, with everything the agent and the page need.
type Task struct {
	TaskNo            string          `json:"task_no"`
	Printer           string          `json:"printer"`
	Target            string          `json:"target,omitempty"`
	Priority          Priority        `json:"priority"`
	Origin            Origin          `json:"origin"`
	Payload           []byte          `json:"payload,omitempty"`
	Document          json.RawMessage `json:"document,omitempty"`
	Size              int             `json:"size"`
	SHA256            string          `json:"sha256"`
	Seq               uint64          `json:"seq"`
	State             State           `json:"state"`
	Reason            string          `json:"reason,omitempty"`
	Message           string          `json:"message,omitempty"`
	Attempts          int             `json:"attempts"`
	NextDue           time.Time       `json:"next_due,omitzero"`
	Deadline          time.Time       `json:"deadline"`
	Confirmation      Confirmation    `json:"confirmation,omitempty"`
	PossibleDuplicate bool            `json:"possible_duplicate,omitempty"`
	ReprintOf         string          `json:"reprint_of,omitempty"`
	Truncated         bool            `json:"truncated,omitempty"`
	AcceptedAt        time.Time       `json:"accepted_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	Timeline          []TimelineEntry `json:"timeline,omitempty"`
	// Events counts the events of this task's history, one per transition;
	// the next one is numbered Events+1. It counts on when the outbox is
	// disabled (and events are not written), so numbers never repeat.
	Events int `json:"events"`
	// Pruned is set when retention dropped the body and timeline and only the
	// dedupe tombstone remains.
	Pruned bool `json:"pruned,omitempty"`
	// Reclaimed is set with Pruned when the body went before its retention
	// ran out, because the spool or its door's quota needed the room
	// (reclaim.go): a reprint is refused with ErrReclaimed.
	Reclaimed bool `json:"reclaimed,omitempty"`
}

// Lane is the printer whose lane holds the task: the failover target when
// one is set, else the configured printer.
func (t *Task) Lane() string {
	if t.Target != "" {
		return t.Target
	}
	return t.Printer
}

// TimelineEntry is one transition in a task's history.
type TimelineEntry struct {
	State    State     `json:"state"`
	At       time.Time `json:"at"`
	Reason   string    `json:"reason,omitempty"`
	Printer  string    `json:"printer,omitempty"`
	Attempts int       `json:"attempts,omitempty"`
}

// Event is one outbox entry owed to the cloud (PROTOCOL.md §5 events).
type Event struct {
	TaskNo            string       `json:"task_no"`
	N                 int          `json:"n"`
	State             State        `json:"state"`
	Reason            string       `json:"reason,omitempty"`
	Printer           string       `json:"printer"`
	Target            string       `json:"target,omitempty"`
	Confirmation      Confirmation `json:"confirmation,omitempty"`
	Attempts          int          `json:"attempts"`
	PossibleDuplicate bool         `json:"possible_duplicate,omitempty"`
	Origin            Origin       `json:"origin"`
	At                time.Time    `json:"at"`
	Job               *JobInfo     `json:"job,omitempty"`
	// Seq is the task's accept sequence: a task_no accepted again once
	// its dedupe window is over is a new task with a new Seq, so the
	// cloud tells its events from the old one's (PROTOCOL.md §5).
	Seq uint64 `json:"seq,omitempty"`
}

// JobInfo describes a locally submitted task to the cloud without its body;
// it rides on the task's first event, or on its latest once compaction of a
// full outbox removed the first.
type JobInfo struct {
	Printer  string   `json:"printer"`
	Priority Priority `json:"priority"`
	Origin   Origin   `json:"origin"`
	Size     int      `json:"size"`
	SHA256   string   `json:"sha256"`
}

// Change is what a Transition records besides the new state. Nil pointer
// fields leave the task's value as it is.
type Change struct {
	Reason            string
	Message           string
	Attempts          *int
	NextDue           *time.Time
	Target            *string
	Confirmation      Confirmation
	PossibleDuplicate *bool
}
