package agentlink

import (
	"errors"
	"testing"

	"github.com/gorilla/websocket"

	"printgate/sync/wire"
)

// TestRefusalBeforeClose: a hello naming another agent than the handshake
// is answered with an error frame saying why, and only then closed (1008).
// The writer picked between the queued error frame and the close at
// random, and the close once overtook the frame. It is tried as often as
// the store's handshake budget allows within the test.
func TestRefusalBeforeClose(t *testing.T) {
	r := newRig(t)
	for i := range connBudget - 1 {
		ws := r.dial(t, r.token, "agent-1")
		send(t, ws, &wire.Hello{AgentID: "someone-else", Version: "x"})
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("try %d: read %v; want the error frame before the close", i, err)
		}
		if m, err := wire.Decode(data); err != nil || m.Type() != wire.TypeError {
			t.Fatalf("try %d: %s (%v); want an error frame", i, data, err)
		}
		_, _, err = ws.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
			t.Fatalf("try %d: after the error frame %v; want close 1008", i, err)
		}
		ws.Close()
	}
}
