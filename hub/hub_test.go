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

// TestCloudcheckWithTestAPI runs `printgate cloudcheck`'s handshake, jobs,
// events and commands checks against a hub with its test API on (pings
// every 200 ms, watched for 3 s): the handshake, a job queued before the
// agent connects coming after welcome, job acks after the
// agent's fsync, a lost ack answered duplicate on the next connection and
// never renumbered, a rejected job not resent, events in the frame's
// order, deduped, with their gaps, commands and their results, log tails,
// revoke. The agents it plays are the agent's real link over real spools.
func TestCloudcheckWithTestAPI(t *testing.T) {
	runCloudcheck(t, 15, "handshake", "jobs", "events", "commands")
}

// TestCloudcheckPairing runs cloudcheck's pairing checks against the hub's
// device flow (a 1 s interval): a code, authorization_pending at the
// interval, slow_down faster than it, approval through the test API giving
// the agent's own pairing a token that opens the websocket, expiry and
// denial answered expired_token and access_denied.
func TestCloudcheckPairing(t *testing.T) {
	runCloudcheck(t, 6, "pairing")
}

// runCloudcheck runs the checks of groups against a hub with its test API
// on and wants every one of them, want in all, to pass.
func runCloudcheck(t *testing.T, want int, groups ...string) {
	cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 256, TestAPI: true,
		PairingInterval: time.Second, PingInterval: 200 * time.Millisecond}
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
		AuthURL:  "http://" + h.Addr().String() + "/oauth",
		Only:     groups,
		Step:     20 * time.Second, Quiet: time.Second, PingWait: 3 * time.Second,
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
	if len(rep.Checks) != want {
		t.Errorf("%d checks ran, want the %d of %v", len(rep.Checks), want, groups)
	}
}
