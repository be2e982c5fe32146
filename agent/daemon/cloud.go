package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"printgate/agent"
	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/agent/logring"
	"printgate/spool"
	"printgate/sync/link"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// Version is the build version the agent reports to the cloud in hello and
// the manager page shows; `printgate` sets it from its own build stamp.
var Version = "dev"

// newLink builds the cloud link for a config with a [cloud] table: jobs go
// through Submit, events come from the spool's outbox, commands reach the
// agent, and support's log tail reads ring.
func newLink(cfg *config.Config, a *agent.Agent, sp *spool.Spool, ring *logring.Ring, log *slog.Logger) (*link.Link, error) {
	id, err := agent.LoadOrCreateAgentID(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// The token pairing stored, read before each connect so a new pairing
	// is used without a restart; last is what the link presented.
	var last atomic.Value
	return link.New(link.Options{
		URL:        cfg.Cloud.URL,
		AgentID:    id,
		Version:    Version,
		AckTimeout: cfg.Cloud.AckTimeout,
		Token: func() (string, error) {
			tok, err := pair.Load(cfg.DataDir)
			if err != nil {
				return "", fmt.Errorf("device token (run printgate pair): %w", err)
			}
			last.Store(tok)
			return tok, nil
		},
		Backend:  cloudBackend{a: a, cancelAny: cfg.Cloud.CancelAny},
		Outbox:   sp,
		Commands: sp,
		Classify: classifyForCloud,
		Tailer:   ringTailer{ring},
		Revoked: func(reason string) {
			// Forget the revoked token so the link waits for a new pairing
			// instead of presenting it again, unless a new pairing has
			// already replaced it.
			if tok, err := pair.Load(cfg.DataDir); err == nil && tok == last.Load() {
				if err := pair.Remove(cfg.DataDir); err != nil {
					log.Error("could not remove the revoked device token", "err", err)
				}
			}
			log.Error("the cloud revoked this store's device token: run printgate pair", "reason", reason)
		},
		Logger: log, // the link tags its own lines component=link
	})
}

// cloudBackend is the agent as the cloud link sees it. cancelAny is
// [cloud] cancel_tasks = "any", read when the link is built.
type cloudBackend struct {
	a         *agent.Agent
	cancelAny bool
}

func (b cloudBackend) Submit(ctx context.Context, nt spool.NewTask) (*spool.Task, bool, error) {
	return b.a.Submit(ctx, nt)
}

func (b cloudBackend) Reprint(ctx context.Context, taskNo string) (*spool.Task, error) {
	// A cloud's reprint counts against the cloud's quota.
	return b.a.ReprintAs(ctx, taskNo, spool.OriginCloud)
}

// Cancel cancels one of the cloud's own tasks; another door's only when
// [cloud] cancel_tasks = "any": a cloud reads every task_no in the events,
// and must not be able to take a POS's waiting order off the queue.
func (b cloudBackend) Cancel(ctx context.Context, taskNo string) (*spool.Task, error) {
	if !b.cancelAny {
		t, err := b.a.Task(taskNo)
		if err != nil {
			return nil, err
		}
		if t.Origin != spool.OriginCloud {
			return nil, fmt.Errorf("%w: task %s came through the %s door; the cloud may cancel only the tasks it sent ([cloud] cancel_tasks = \"any\" allows every task); cancel it on the store's manager page", api.ErrNotCloudTask, taskNo, t.Origin)
		}
	}
	return b.a.Cancel(ctx, taskNo)
}

func (b cloudBackend) Printers() []wire.Printer {
	var out []wire.Printer
	for _, p := range b.a.Printers() {
		out = append(out, wire.Printer{Name: p.Name, State: p.State})
	}
	return out
}

// codeNotCloudTask is the command_result code of a cloud cancel of a task
// another door sent (PROTOCOL.md §5): not a code of the local API.
const codeNotCloudTask = "not_cloud_task"

// classifyForCloud maps an intake error to the PROTOCOL §3 code a job_ack
// carries; retry means the agent cannot take the job now and sends no ack,
// so the cloud resends it.
func classifyForCloud(err error) (code, message string, retry bool) {
	switch {
	case errors.Is(err, api.ErrStoredNotPrinting):
		// No job_ack: the cloud resends the same task_no, answered as
		// its duplicate after the restart. A reprint's command_result
		// names the stored version in the message.
		return api.CodeStoredNotPrinting, err.Error(), true
	case errors.Is(err, api.ErrUnavailable), errors.Is(err, spool.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return api.CodeUnavailable, err.Error(), true
	case errors.As(err, new(*spool.QuotaError)):
		// A door's quota: the message names it and the key.
		return api.CodeStorageFull, err.Error(), false
	case errors.Is(err, api.ErrUnknownPrinter):
		return api.CodeUnknownPrinter, err.Error(), false
	case errors.Is(err, api.ErrBadDocument):
		return api.CodeBadDocument, err.Error(), false
	case errors.Is(err, api.ErrBadPayload):
		return api.CodeBadPayload, err.Error(), false
	case errors.Is(err, api.ErrTaskNoTaken):
		code := api.CodeTaskNoOtherContent
		if tt := (*api.TaskNoTaken)(nil); errors.As(err, &tt) {
			code = tt.Code()
		}
		return code, err.Error(), false
	case errors.Is(err, api.ErrNotCloudTask):
		return codeNotCloudTask, err.Error(), false
	case errors.Is(err, api.ErrConflict), errors.Is(err, spool.ErrIllegalTransition):
		return api.CodeConflict, err.Error(), false
	}
	return link.DefaultClassify(err)
}

// ringTailer serves support's logs_tail from the log ring.
type ringTailer struct{ r *logring.Ring }

func (t ringTailer) Tail(ctx context.Context, level, contains string, lines int, follow bool, send func([]string) error) error {
	var lv slog.Level
	if level != "" {
		if err := lv.UnmarshalText([]byte(level)); err != nil {
			return fmt.Errorf("log level %q: %w", level, err)
		}
	}
	return t.r.Tail(ctx, logring.TailOptions{Level: lv, Contains: contains, Lines: lines, Follow: follow}, send)
}
