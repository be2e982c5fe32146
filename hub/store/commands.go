package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"printgate/sync/wire"
)

// Command is a reprint or cancel the order system asked of a store's
// agent, under an id the caller chose (the agent runs a resent id once),
// with the agent's answer once it came.
type Command struct {
	ID     string              `json:"id"`
	Type   string              `json:"type"` // reprint or cancel
	TaskNo string              `json:"task_no"`
	Asked  time.Time           `json:"asked"`
	Sent   int                 `json:"sent"`
	Result *wire.CommandResult `json:"result,omitempty"`
	At     time.Time           `json:"answered,omitzero"`
}

// commandKey is a command's key in hub_commands.
func commandKey(store, id string) string { return taskKey(store, id) }

// AddCommand records a new command of a store; an id the store already
// has is ErrExists with the stored command (whatever its type or task).
func (s *Store) AddCommand(ctx context.Context, store string, c Command) (Command, error) {
	if _, err := s.commands.Create(ctx, commandKey(store, c.ID), mustJSON(c)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			old, gerr := s.CommandOf(ctx, store, c.ID)
			if gerr != nil {
				return Command{}, gerr
			}
			return old, ErrExists
		}
		return Command{}, fmt.Errorf("store: add command %s: %w", c.ID, kvErr(err))
	}
	return c, nil
}

// CommandOf returns a store's command by id, or ErrNotFound.
func (s *Store) CommandOf(ctx context.Context, store, id string) (Command, error) {
	var c Command
	_, err := getJSON(ctx, s.commands, commandKey(store, id), &c)
	return c, err
}

// CommandSent counts a send of a store's command.
func (s *Store) CommandSent(ctx context.Context, store, id string) error {
	return s.changeCommand(ctx, store, id, func(c *Command) bool { c.Sent++; return true })
}

// CommandAnswered records the agent's command_result for one of the
// store's commands (the first answer stays: a resent id is answered with
// the first copy's result). A result for an id the hub never sent is
// ignored.
func (s *Store) CommandAnswered(ctx context.Context, store string, r wire.CommandResult, now time.Time) error {
	err := s.changeCommand(ctx, store, r.ID, func(c *Command) bool {
		if c.Result != nil {
			return false
		}
		c.Result, c.At = &r, now
		return true
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (s *Store) changeCommand(ctx context.Context, store, id string, change func(*Command) bool) error {
	_, err := casJSON(ctx, s.commands, commandKey(store, id), func(c *Command, found bool) (bool, error) {
		if !found {
			return false, ErrNotFound
		}
		return change(c), nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("store: command %s: %w", id, err)
	}
	return err
}
