package spool

// transitions is the state machine of docs/STATES.md in one table: transitions[from]
// lists the states a task may move to. Anything else is ErrIllegalTransition.
//
// Beyond the diagram it allows two moves the lanes need: QUEUED → QUEUED, which
// re-targets a queued task (failover, failback) and is recorded like any other
// transition, and SENDING → QUEUED / PARKED for a job that was stopped by the
// pre-send health check before any byte left (paper out, busy, offline), which
// is not a failure and spends no attempt.
var transitions = map[State][]State{
	StateAccepted:  {StateQueued, StateParked, StateTimedOut, StateFailed, StateCanceled},
	StateQueued:    {StateQueued, StateSending, StateParked, StateTimedOut, StateFailed, StateCanceled},
	StateSending:   {StatePrinted, StateRetryWait, StateUnknown, StateQueued, StateParked, StateTimedOut, StateFailed},
	StateRetryWait: {StateQueued, StateParked, StateTimedOut, StateFailed, StateCanceled},
	StateUnknown:   {StateQueued, StateHeld, StateTimedOut, StateFailed},
	StateHeld:      {StateQueued, StateTimedOut, StateFailed, StateCanceled},
	StateParked:    {StateQueued, StateParked, StateTimedOut, StateFailed, StateCanceled},
}

// CanTransition reports whether the state table allows from → to.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
