package agentlink

import (
	"strings"
	"testing"
	"time"

	"printgate/internal/clock"
	"printgate/sync/wire"
)

// TestSilentAgentShownOffline: a store whose agent has sent nothing (no
// frame, ping or pong) for SilentAfter is shown offline, though the hub
// drops its connection only at §5's 60 s of silence: the fleet page must
// show a store offline within 60 s of its link going silent. A frame
// shows it online again.
func TestSilentAgentShownOffline(t *testing.T) {
	fc := clock.NewFakeClock(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	// No pings from the hub during the test: a pong would be heard.
	r := newRigWith(t, Options{Clock: fc, PingInterval: time.Hour})
	ws := r.dial(t, r.token, "agent-1")
	hello(t, ws, "agent-1")
	online := func() AgentStatus {
		t.Helper()
		st, ok := r.srv.Status("s1")
		if !ok {
			t.Fatal("no status for s1 after its agent's hello")
		}
		return st
	}
	if st := online(); !st.Online {
		t.Fatalf("after hello: %+v, want online", st)
	}
	fc.Advance(SilentAfter - time.Second)
	if st := online(); !st.Online {
		t.Fatalf("silent %v: %+v, want still online", SilentAfter-time.Second, st)
	}
	fc.Advance(2 * time.Second)
	st := online()
	if st.Online || !strings.Contains(st.LastDrop, "silent") || st.LastSeen.IsZero() {
		t.Fatalf("silent %v: %+v, want offline, its last drop naming the silence and when it was last heard", SilentAfter+time.Second, st)
	}
	if !r.srv.IsConnected("s1") {
		t.Fatal("the connection itself was dropped: it must stay up until §5's silence timeout")
	}
	send(t, ws, &wire.Printers{Printers: []wire.Printer{{Name: "kitchen", State: "PAPER_OUT"}}})
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := online()
		if st.Online && len(st.Printers) == 1 && st.Printers[0].State == "PAPER_OUT" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a frame: %+v, want online with its printers", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
