package agentlink

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"printgate/sync/cloudcheck"
)

// TestCloudcheckWithoutTestAPI runs `printgate cloudcheck`'s checks that
// need no test API (PROTOCOL.md §7) against the hub's websocket, as one
// agent with a device token the hub issued: the handshake (subprotocol,
// tokens, welcome, pings both ways) and the events (every events_ack
// names a batch the agent sent, the outbox empties). The agents it plays
// are the agent's real link over real spools.
func TestCloudcheckWithoutTestAPI(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := cloudcheck.Run(ctx, cloudcheck.Options{
		CloudURL: r.url, NoTestAPI: true, Token: r.token, AgentID: "cloudcheck-agent",
		Only:     []string{"handshake", "events"},
		PingWait: 3 * time.Second, Step: 20 * time.Second, Quiet: time.Second,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	t.Logf("report:\n%s", buf.String())
	ran := 0
	for _, c := range rep.Checks {
		switch c.Status {
		case cloudcheck.Fail:
			t.Errorf("%s failed: %s", c.Name, c.Seen)
		case cloudcheck.Pass:
			ran++
		}
	}
	if ran < 5 {
		t.Errorf("%d checks passed, want the 4 handshake checks and events.ack", ran)
	}
}
