package hub

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"printgate/hub/config"
	"printgate/sync/cloudcheck"
)

// TestCloudcheckWithTestAPI runs `printgate cloudcheck`'s jobs, events and
// commands checks against a hub with its test API on: job acks after the
// agent's fsync, a lost ack answered duplicate on the next connection and
// never renumbered, a rejected job not resent, events in the frame's
// order, deduped, with their gaps, commands and their results, log tails,
// revoke. The agents it plays are the agent's real link over real spools.
func TestCloudcheckWithTestAPI(t *testing.T) {
	cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 256, TestAPI: true}
	log := slog.New(slog.DiscardHandler)
	h, err := Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve() }()
	defer func() {
		h.Close()
		<-served
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := cloudcheck.Run(ctx, cloudcheck.Options{
		CloudURL: "ws://" + h.Addr().String() + "/agent/v1",
		Only:     []string{"jobs", "events", "commands"},
		Step:     20 * time.Second, Quiet: time.Second,
		Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	t.Logf("report:\n%s", buf.String())
	for _, c := range rep.Checks {
		if c.Status != cloudcheck.Pass {
			t.Errorf("%s %s: %s", c.Status, c.Name, c.Seen)
		}
	}
	if len(rep.Checks) != 11 {
		t.Errorf("%d checks ran, want the 11 of jobs, events and commands", len(rep.Checks))
	}
}
