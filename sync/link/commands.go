package link

import (
	"container/list"
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"printgate/spool"
	"printgate/sync/wire"
)

// maxRecentCommands bounds how many command results the link remembers. A
// resend comes after a reconnect, seconds after the first copy; a few
// hundred ids are far more than a cloud sends in that time, and cost a
// few tens of KiB at most.
const maxRecentCommands = 256

// recentCommands remembers the results of the last commands (reprint,
// cancel) the link executed, by id, so that a command the cloud resends,
// because the answer was lost with a connection, is answered with its first
// result instead of being executed again: a reprint resent after a
// reconnect prints once. It is a small LRU in memory, shared by every
// connection of the Link; Options.Commands keeps the same results on disk,
// so a resend after the agent's restart is answered from there. A result
// the cloud is asked to retry (the agent could not act now) is not
// remembered: the resend runs.
type recentCommands struct {
	mu    sync.Mutex
	byID  map[string]*commandEntry
	order list.List // of ids, oldest first
}

// commandEntry is one command by id: running until done is closed, then
// result is its answer, or nil when the resend should run it again.
type commandEntry struct {
	done   chan struct{}
	result *wire.CommandResult
	elem   *list.Element
}

// begin returns id's entry, and whether the caller is the first to run it
// (it must then call finish).
func (r *recentCommands) begin(id string) (*commandEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.byID[id]; ok {
		r.order.MoveToBack(e.elem)
		return e, false
	}
	if r.byID == nil {
		r.byID = map[string]*commandEntry{}
	}
	e := &commandEntry{done: make(chan struct{})}
	e.elem = r.order.PushBack(id)
	r.byID[id] = e
	for r.order.Len() > maxRecentCommands {
		oldest := r.order.Front()
		delete(r.byID, oldest.Value.(string))
		r.order.Remove(oldest)
	}
	return e, true
}

// finish records the result of the command begin let the caller run; keep
// false forgets it, so that a resend runs again.
func (r *recentCommands) finish(id string, e *commandEntry, res *wire.CommandResult, keep bool) {
	r.mu.Lock()
	if keep {
		e.result = res
	} else if r.byID[id] == e {
		delete(r.byID, id)
		r.order.Remove(e.elem)
	}
	r.mu.Unlock()
	close(e.done)
}

// len is how many results are remembered, for tests.
func (r *recentCommands) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// command answers the command id, running run only if no earlier copy of
// it ran or runs (on this connection or an earlier one, or before the
// agent's restart): a copy waits for the first one's result and answers
// it. run's context carries id (spool.WithCommand), so a reprint's new
// task stores the result in its own transaction.
func (s *session) command(id string, run func(context.Context) (*spool.Task, error)) wire.Message {
	for {
		e, first := s.l.commands.begin(id)
		if first {
			if res := s.storedResult(id); res != nil {
				s.l.commands.finish(id, e, res, true)
				s.l.peerWarns.Log(s.l.log, slog.LevelInfo, "cloud command resent after a restart: answered with its first result, not run again", "id", id, "ok", res.OK)
				return res
			}
			t, err := run(spool.WithCommand(s.ctx, id))
			res, keep := s.result(id, t, err)
			if keep {
				s.storeResult(id, res)
			}
			s.l.commands.finish(id, e, res, keep)
			return res
		}
		select {
		case <-e.done:
		case <-s.ctx.Done():
			return nil // the connection is gone; the cloud resends
		}
		if e.result != nil {
			s.l.peerWarns.Log(s.l.log, slog.LevelInfo, "cloud command resent: answered with its first result, not run again", "id", id, "ok", e.result.OK)
			return e.result
		}
		// The first copy asked for a resend: this is it.
	}
}

// storedResult is the result Options.Commands kept for id from before a
// restart, or nil.
func (s *session) storedResult(id string) *wire.CommandResult {
	st := s.l.opts.Commands
	if st == nil {
		return nil
	}
	raw, ok, err := st.CommandResult(id)
	if err != nil {
		s.l.log.Error("could not read a cloud command's stored result; running it", "id", id, "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	res := new(wire.CommandResult)
	if err := json.Unmarshal(raw, res); err != nil {
		s.l.log.Error("a cloud command's stored result is unreadable; running it", "id", id, "err", err)
		return nil
	}
	res.ID = id
	return res
}

// storeResult keeps id's final result in Options.Commands before it is
// answered. A failed write is logged: the answer still goes, and only a
// resend after a restart would run the command again.
func (s *session) storeResult(id string, res *wire.CommandResult) {
	st := s.l.opts.Commands
	if st == nil {
		return
	}
	raw, err := json.Marshal(res)
	if err == nil {
		err = st.SaveCommandResult(id, raw)
	}
	if err != nil {
		// Rate-limited: a cloud's own id (one of kilobytes) can refuse it.
		short := id
		if len(short) > 64 {
			short = short[:64] + "…"
		}
		s.l.peerWarns.Warn(s.l.log, "could not store a cloud command's result; a resend of it after a restart would run it again", "id", short, "err", err)
	}
}
