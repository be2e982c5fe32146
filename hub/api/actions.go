package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"printgate/hub/store"
	"printgate/sync/wire"
)

// The actions below are the order API's reprint, cancel and pairing
// decisions without the HTTP around them: the API's routes and the fleet
// page (hub/fleet) both call them, so a manager's button and an order
// system's request take the same path.

// CommandOutcome says what became of a reprint or cancel.
type CommandOutcome int

// Outcomes of Command.
const (
	// CommandSent: sent to the store's connected agent; its result comes
	// later (the command's record, CommandOf).
	CommandSent CommandOutcome = iota
	// CommandAnswered: the id was asked before and the agent answered it;
	// nothing was sent again.
	CommandAnswered
	// CommandNotConnected: recorded, not sent: the store's agent is not
	// connected here. The same id again sends it.
	CommandNotConnected
	// CommandConflict: the id names another command (type or task).
	CommandConflict
)

// Command asks the store's agent to reprint or cancel (typ wire.TypeReprint
// or wire.TypeCancel) the task taskNo under the caller's id: the same id
// again is the same command, sent again until the agent answered it (the
// agent runs an id once). The returned Command is the record.
func (a *API) Command(ctx context.Context, st store.StoreInfo, typ, taskNo, id string) (store.Command, CommandOutcome, error) {
	if a.opts.Link == nil {
		return store.Command{}, CommandNotConnected, nil
	}
	c, err := a.st.AddCommand(ctx, st.ID, store.Command{ID: id, Type: typ, TaskNo: taskNo, Asked: a.opts.Clock.Now().UTC()})
	switch {
	case errors.Is(err, store.ErrExists):
		if c.Type != typ || c.TaskNo != taskNo {
			return c, CommandConflict, nil
		}
		if c.Result != nil {
			return c, CommandAnswered, nil
		}
	case err != nil:
		return c, 0, fmt.Errorf("record a command: %w", err)
	}
	var m wire.Message = &wire.Reprint{ID: id, TaskNo: taskNo}
	if typ == wire.TypeCancel {
		m = &wire.Cancel{ID: id, TaskNo: taskNo}
	}
	if err := a.opts.Link.Send(st.ID, m); err != nil {
		return c, CommandNotConnected, nil
	}
	if err := a.st.CommandSent(ctx, st.ID, id); err == nil {
		c.Sent++
	}
	return c, CommandSent, nil
}

// TooManyCodesError is DecidePairing's refusal while the tenant is held
// up for unknown codes; Left is how long.
type TooManyCodesError struct{ Left time.Duration }

// Error says what happened.
func (e *TooManyCodesError) Error() string {
	return fmt.Sprintf("too many unknown pairing codes from the tenant; retry in %v", e.Left.Round(time.Second))
}

// DecidePairing approves the pairing code for the store (the agent that
// shows the code gets a device token of this store at its next poll) or
// refuses it. Unknown codes are counted per tenant as wrong API keys are
// per address: past the tenth in a minute every decision of the tenant,
// the right code's too, is *TooManyCodesError for a minute, so nobody of a
// tenant can guess the code of an agent waiting to be paired elsewhere.
// The store's errors pass through: store.ErrNotFound, store.ErrDecided,
// store.ErrExpiredCode.
func (a *API) DecidePairing(ctx context.Context, st store.StoreInfo, code string, approve bool) error {
	if left := a.codes.locked(st.Tenant); left > 0 {
		return &TooManyCodesError{Left: left}
	}
	err := a.st.DecidePairing(ctx, code, approve, st, a.opts.Clock.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		a.codes.wrong(st.Tenant)
		if a.codes.locked(st.Tenant) > 0 {
			a.log.Warn("hub api: too many unknown pairing codes; the tenant's pairing decisions are refused for a minute", "tenant", st.Tenant)
		}
	}
	if err == nil {
		a.log.Info("hub api: pairing decided", "store", st.ID, "approved", approve)
	}
	return err
}
