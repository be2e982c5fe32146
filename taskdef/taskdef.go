// Package taskdef holds the words a print task is described with that the
// store's spool and the cloud protocol (sync/wire) share: its states,
// origins, priorities and confirmation levels. It is a leaf, so the cloud
// side (printgate-hub) speaks the wire without linking the spool and its
// storage engine. The spool re-exports each name (spool.State is
// taskdef.State), so the agent's code reads as before.
package taskdef

import "slices"

// State is a task's place in the state machine of docs/DESIGN.md, "States".
type State string

// The task states. Terminal states are PRINTED, TIMED_OUT, FAILED, CANCELED.
const (
	StateAccepted  State = "ACCEPTED"
	StateQueued    State = "QUEUED"
	StateSending   State = "SENDING"
	StatePrinted   State = "PRINTED"
	StateRetryWait State = "RETRY_WAIT"
	StateUnknown   State = "UNKNOWN"
	StateHeld      State = "HELD"
	StateParked    State = "PARKED"
	StateTimedOut  State = "TIMED_OUT"
	StateFailed    State = "FAILED"
	StateCanceled  State = "CANCELED"
)

// AllStates lists every state, in the order the state machine reads.
var AllStates = []State{
	StateAccepted, StateQueued, StateSending, StatePrinted, StateRetryWait,
	StateUnknown, StateHeld, StateParked, StateTimedOut, StateFailed, StateCanceled,
}

// Terminal reports whether no further transition can leave s.
func (s State) Terminal() bool {
	switch s {
	case StatePrinted, StateTimedOut, StateFailed, StateCanceled:
		return true
	}
	return false
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	return slices.Contains(AllStates, s)
}

// Priority orders tasks inside a printer's lane.
type Priority string

// The priorities. Urgent tasks go first; the lane ages normal ones.
const (
	PriorityUrgent Priority = "urgent"
	PriorityNormal Priority = "normal"
)

// Priorities lists the priorities a task may carry, for validation in the
// spool and in the cloud protocol alike, as Origins does for origins.
func Priorities() []Priority {
	return []Priority{PriorityNormal, PriorityUrgent}
}

// Origin says where a task came from.
type Origin string

// The origins of docs/DESIGN.md, "The task".
const (
	OriginCloud   Origin = "cloud"
	OriginLocal   Origin = "local"
	OriginManager Origin = "manager"
	// OriginRaw is a job a POS printed to a printer's raw port (raw_listen):
	// bytes as a port-9100 printer receives them, with a generated task_no.
	OriginRaw Origin = "raw"
)

// Origins lists every origin a task may have, for validation in the spool
// and in the cloud protocol alike, so a new origin cannot be accepted by
// one and refused by the other.
func Origins() []Origin {
	return []Origin{OriginCloud, OriginLocal, OriginManager, OriginRaw}
}

// Confirmation is how strong the proof of paper was (docs/ESCPOS.md §2).
type Confirmation string

// The confirmation levels, strongest first.
const (
	ConfirmPrinted   Confirmation = "printed"
	ConfirmConsumed  Confirmation = "consumed"
	ConfirmDelivered Confirmation = "delivered"
)
