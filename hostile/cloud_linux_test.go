package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/sync/pair"
	"printgate/sync/wire"
)

// hostileCloud is a cloud that says welcome and then does what attack
// says, on loopback. It takes any device token.
type hostileCloud struct {
	srv  *httptest.Server
	conn chan *websocket.Conn
}

func newHostileCloud(t *testing.T) *hostileCloud {
	t.Helper()
	c := &hostileCloud{conn: make(chan *websocket.Conn, 4)}
	up := websocket.Upgrader{Subprotocols: []string{wire.Subprotocol}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		var hello map[string]any
		if err := ws.ReadJSON(&hello); err != nil || hello["type"] != wire.TypeHello {
			ws.Close()
			return
		}
		ws.WriteJSON(map[string]any{"type": wire.TypeWelcome, "store_id": "evil-store", "server_time": time.Now().UTC().Format(time.RFC3339)})
		c.conn <- ws
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// setup is the agent's config and data dir for this cloud: a [cloud] table
// at it and a device token on disk, so the link connects at start.
func (c *hostileCloud) setup() Setup {
	ws := "ws" + strings.TrimPrefix(c.srv.URL, "http") + "/agent"
	return Setup{
		Tables: fmt.Sprintf("[cloud]\nurl = %q\nauth_url = %q\n", ws, c.srv.URL+"/oauth"),
		Before: func(dir string) {
			if err := pair.Save(dir, "device-token-0123456789abcdef0123456789"); err != nil {
				panic(err)
			}
		},
	}
}

// accepted waits for the agent's connection.
func (c *hostileCloud) accepted(t *testing.T, a *Agent) *websocket.Conn {
	t.Helper()
	select {
	case ws := <-c.conn:
		t.Cleanup(func() { ws.Close() })
		return ws
	case <-time.After(30 * time.Second):
		t.Fatalf("the agent never connected to the cloud\n%s", a.Logs())
		return nil
	}
}

// rssMiB is a process's resident memory.
func rssMiB(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb / 1024
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}

// TestCloudTailFloodBounded is the memory attack: a cloud that
// sends 20,000 following logs_tail frames and never reads once took the
// agent from 32 MB to 1.3 GB in 5 s. At most MaxTails run per connection;
// the rest are refused, and memory stays bounded.
func TestCloudTailFloodBounded(t *testing.T) {
	c := newHostileCloud(t)
	a := start(t, c.setup())
	ws := c.accepted(t, a)
	before := rssMiB(t, a.Pid())
	ws.SetWriteDeadline(time.Now().Add(30 * time.Second))
	for i := range 20000 {
		f := map[string]any{"type": wire.TypeLogsTail, "id": fmt.Sprintf("tail-%d", i), "follow": true, "lines": 1000}
		if err := ws.WriteJSON(f); err != nil {
			// The agent may close a connection that floods it: that is a
			// defence, not a failure.
			t.Logf("write %d: %v", i, err)
			break
		}
	}
	// Give the agent time to act on what it read, then look.
	peak := before
	for range 20 {
		time.Sleep(250 * time.Millisecond) // another process's memory
		peak = max(peak, rssMiB(t, a.Pid()))
	}
	t.Logf("agent RSS %d MiB before the flood, peak %d MiB after", before, peak)
	if peak > before+150 {
		t.Errorf("a tail flood grew the agent from %d to %d MiB", before, peak)
	}
	if code := a.submit(t, "AFTER-TAILS"); code != 202 && code != 200 {
		t.Errorf("after the flood a POS ticket is HTTP %d", code)
	}
}

// TestCloudUnknownAckFloodLogBounded is the log attack: 243,730
// unknown events_ack frames in 9 s rotated the log 3 times, each one a WARN
// line. They are rate-limited: a handful of lines, then a count.
func TestCloudUnknownAckFloodLogBounded(t *testing.T) {
	c := newHostileCloud(t)
	a := start(t, c.setup())
	ws := c.accepted(t, a)
	go func() { // drain what the agent sends so it never blocks on us
		for {
			if _, _, err := ws.NextReader(); err != nil {
				return
			}
		}
	}()
	const flood = 100000
	ws.SetWriteDeadline(time.Now().Add(60 * time.Second))
	sent := 0
	for i := range flood {
		b, _ := json.Marshal(map[string]any{"type": wire.TypeEventsAck, "batch": fmt.Sprintf("nope-%d", i)})
		if err := ws.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Logf("write %d: %v", i, err)
			break
		}
		sent++
	}
	// One more ticket makes sure the agent has read and handled the flood
	// before the log is counted: its frames are handled in order.
	if code := a.submit(t, "AFTER-ACKS"); code != 202 && code != 200 {
		t.Fatalf("after the flood a POS ticket is HTTP %d", code)
	}
	time.Sleep(2 * time.Second) // let the agent's reader catch up with the socket
	logs, _ := filepath.Glob(filepath.Join(a.Dir, "printgate*.log*"))
	var warned int
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		warned += strings.Count(string(b), "events_ack for a batch not in flight")
	}
	t.Logf("%d unknown events_ack sent; %d log lines about them in %d log files", sent, warned, len(logs))
	if len(logs) > 1 {
		t.Errorf("the flood rotated the log: %v", logs)
	}
	if warned > 20 {
		t.Errorf("%d log lines for %d unknown acks; want a handful and a count", warned, sent)
	}
}
