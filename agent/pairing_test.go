package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
)

// cloudDefaults is a harness's [defaults] text followed by a [cloud] table
// pointing at srv.
func cloudDefaults(srv *httptest.Server) string {
	ws := "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath
	return fmt.Sprintf("[cloud]\nurl = %q\nauth_url = %q\n", ws, srv.URL+"/oauth")
}

// TestPairingFromThePage runs the pairing page's flow against the
// reference cloud: unpaired, the page shows a code (the same one on every
// visit while it is valid); a manager approves it; the agent saves the
// token, the link connects at once and the page shows the store; unpairing
// forgets the token and the page offers a new code.
func TestPairingFromThePage(t *testing.T) {
	cloud := cloudtest.New(cloudtest.Options{StoreID: "store-42", PollInterval: time.Second})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, cloudDefaults(srv))
	ctx := context.Background()

	if li := h.a.Link(); li.State != "offline" {
		t.Errorf("link before AttachLink: %+v, want offline", li)
	}
	lk := testLink(t, h)
	h.a.AttachLink(lk)
	linkCtx, stopLink := context.WithCancel(ctx)
	linkDone := make(chan struct{})
	go func() { defer close(linkDone); lk.Run(linkCtx) }()
	defer func() { stopLink(); <-linkDone }()

	first := h.a.Pairing(ctx)
	if !first.Configured || first.Paired || first.UserCode == "" || first.VerificationURI == "" || first.Error != "" {
		t.Fatalf("unpaired pairing %+v, want a code", first)
	}
	if again := h.a.Pairing(ctx); again.UserCode != first.UserCode {
		t.Errorf("second visit got code %q, want the pending %q", again.UserCode, first.UserCode)
	}
	if err := cloud.Approve(first.UserCode); err != nil {
		t.Fatal(err)
	}
	// The flow polls on the agent's clock, once a second.
	h.advanceUntil("token saved", 500*time.Millisecond, func() bool {
		_, err := pair.Load(h.cfg.DataDir)
		return err == nil
	})
	agentID, err := LoadOrCreateAgentID(h.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	limit, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	if err := cloud.WaitConnected(limit, agentID, true); err != nil {
		t.Fatalf("the link did not connect after pairing: %v", err)
	}
	// The live view hears of it through the event (agent/daemon's changeOf).
	h.waitFor("a link change to online for the live view", func(e Event) bool { return e.Link && e.LinkState == "online" })
	if got := h.a.Pairing(ctx); !got.Paired || got.Store != "store-42" || got.UserCode != "" {
		t.Errorf("paired pairing %+v, want paired to store-42", got)
	}
	if li := h.a.Link(); li.State != "online" || li.Store != "store-42" {
		t.Errorf("link %+v, want online to store-42", li)
	}

	if err := h.a.Unpair(); err != nil {
		t.Fatal(err)
	}
	if _, err := pair.Load(h.cfg.DataDir); err == nil {
		t.Error("the token is still stored after Unpair")
	}
	next := h.a.Pairing(ctx)
	if next.Paired || next.UserCode == "" || next.UserCode == first.UserCode {
		t.Errorf("after unpair %+v, want a new code", next)
	}
	// The harness stops the agent with this flow pending: Run's end must
	// stop its goroutine (goleak checks).
}

// TestPairingCodeExpires ensures an expired code is replaced by a new one
// on the next visit, without waiting for the old flow to notice.
func TestPairingCodeExpires(t *testing.T) {
	cloud := cloudtest.New(cloudtest.Options{PollInterval: time.Second, DeviceCodeLifetime: time.Minute})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, cloudDefaults(srv))
	first := h.a.Pairing(context.Background())
	if first.UserCode == "" {
		t.Fatalf("no code: %+v", first)
	}
	if !first.Expires.After(h.clock.Now()) || first.Expires.After(h.clock.Now().Add(time.Minute+time.Second)) {
		t.Errorf("expires %v, want within a minute of %v on the agent's clock", first.Expires, h.clock.Now())
	}
	h.clock.Advance(2 * time.Minute)
	second := h.a.Pairing(context.Background())
	if second.UserCode == "" || second.UserCode == first.UserCode {
		t.Errorf("after expiry %+v, want a new code (old %q)", second, first.UserCode)
	}
}

// TestPairingCloudDown ensures a cloud that cannot give a code is reported
// on the page, and not asked again on every visit.
func TestPairingCloudDown(t *testing.T) {
	var asks atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asks.Add(1)
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, cloudDefaults(srv))
	got := h.a.Pairing(context.Background())
	if got.Error == "" || got.UserCode != "" || !got.Configured {
		t.Fatalf("pairing with the cloud down: %+v", got)
	}
	h.a.Pairing(context.Background())
	if n := asks.Load(); n != 1 {
		t.Errorf("the cloud was asked %d times within the retry gap, want 1", n)
	}
	h.clock.Advance(pairRetryGap)
	h.a.Pairing(context.Background())
	if n := asks.Load(); n != 2 {
		t.Errorf("the cloud was asked %d times after the gap, want 2", n)
	}
}

// TestPairingWithoutCloud ensures an agent without a [cloud] table shows
// pairing as not configured and the link as disabled.
func TestPairingWithoutCloud(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	if got := h.a.Pairing(context.Background()); got.Configured || got.UserCode != "" {
		t.Errorf("pairing %+v, want not configured", got)
	}
	if li := h.a.Link(); li.State != "disabled" {
		t.Errorf("link %+v, want disabled", li)
	}
}
