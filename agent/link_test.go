package agent

import (
	"context"
	"testing"

	"printgate/spool"
	"printgate/sync/link"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// testLink builds a cloud link for h's [cloud] table as agent/daemon's
// newLink does, reduced to what the tests here use: jobs go through
// Submit, events come from the spool's outbox, the token is the one
// pairing stored. (The daemon's own tests run the real one end to end.)
func testLink(t *testing.T, h *harness) *link.Link {
	t.Helper()
	id, err := LoadOrCreateAgentID(h.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := link.New(link.Options{
		URL:     h.cfg.Cloud.URL,
		AgentID: id,
		Version: "test",
		Token:   func() (string, error) { return pair.Load(h.cfg.DataDir) },
		Backend: linkBackend{h.a},
		Outbox:  h.sp,
		Logger:  testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// linkBackend is the agent as the test link sees it.
type linkBackend struct{ a *Agent }

func (b linkBackend) Submit(ctx context.Context, nt spool.NewTask) (*spool.Task, bool, error) {
	return b.a.Submit(ctx, nt)
}

func (b linkBackend) Reprint(ctx context.Context, taskNo string) (*spool.Task, error) {
	return b.a.Reprint(ctx, taskNo)
}

func (b linkBackend) Cancel(ctx context.Context, taskNo string) (*spool.Task, error) {
	return b.a.Cancel(ctx, taskNo)
}

func (b linkBackend) Printers() []wire.Printer {
	var out []wire.Printer
	for _, p := range b.a.Printers() {
		out = append(out, wire.Printer{Name: p.Name, State: p.State})
	}
	return out
}
