package hostile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/internal/apispec"
	"printgate/internal/proctest"
	"printgate/sync/wire"
)

// hubBinOnce builds the printgate-hub binary once per run, beside the agent's
// binary (TestMain removes that directory at the end).
var (
	hubBinOnce sync.Once
	hubBinPath string
	hubBinErr  error
)

// hubBin returns the path of the real printgate-hub binary, building it on
// first use.
func hubBin(t *testing.T) string {
	t.Helper()
	hubBinOnce.Do(func() {
		hubBinPath = filepath.Join(filepath.Dir(bin), "printgate-hub")
		build := exec.Command("go", "build", "-o", hubBinPath, "printgate/cmd/printgate-hub")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			hubBinErr = fmt.Errorf("go build printgate-hub: %v\n%s", err, out)
		}
	})
	if hubBinErr != nil {
		t.Fatal(hubBinErr)
	}
	return hubBinPath
}

// Hub is one run of the real printgate-hub with two tenants: acme (stores
// a1, a2) and rival (store r1), an API key each and a device token for
// each store, all made with the hub's CLI on the stopped data dir.
type Hub struct {
	Base, WS string
	Dir      string // the hub's data dir
	Config   string
	KeyAcme  string
	KeyRival string
	Devices  map[string]string // store -> device token
	cmd      *exec.Cmd
	stderr   *proctest.Buffer
	done     chan struct{}
	client   *http.Client
}

// startHub writes a config (log level info, as a production hub runs, and
// max_store_mb 64), adds tenants, stores, keys and devices with the CLI, and
// runs `printgate-hub run` until /healthz answers. Stopped when the test
// ends.
func startHub(t *testing.T) *Hub {
	t.Helper()
	return startHubWith(t, "")
}

// startHubWith is startHub with more TOML at the end of the config (a
// table such as [nats]).
func startHubWith(t *testing.T, extra string) *Hub {
	t.Helper()
	hb := hubBin(t)
	root := t.TempDir()
	port := freePort(t)
	h := &Hub{
		Base: fmt.Sprintf("http://127.0.0.1:%d", port), WS: fmt.Sprintf("ws://127.0.0.1:%d/agent/v1", port),
		Dir: filepath.Join(root, "data"), Config: filepath.Join(root, "hub.toml"),
		Devices: map[string]string{}, stderr: &proctest.Buffer{}, done: make(chan struct{}),
		client: &http.Client{Timeout: 20 * time.Second},
	}
	cfg := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\nmax_store_mb = 64\n%s", h.Dir, port, extra)
	if err := os.WriteFile(h.Config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) string {
		var out, errb bytes.Buffer
		c := exec.Command(hb, append(args, "--config", h.Config)...)
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("printgate-hub %v: %v\n%s", args, err, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	cli("tenant", "add", "--id", "acme")
	cli("tenant", "add", "--id", "rival")
	cli("store", "add", "--tenant", "acme", "--id", "a1")
	cli("store", "add", "--tenant", "acme", "--id", "a2")
	cli("store", "add", "--tenant", "rival", "--id", "r1")
	h.KeyAcme = cli("key", "add", "--tenant", "acme")
	h.KeyRival = cli("key", "add", "--tenant", "rival")
	for _, s := range []string{"a1", "a2", "r1"} {
		h.Devices[s] = cli("device", "add", "--store", s)
	}
	h.cmd = exec.Command(hb, "run", "--config", h.Config)
	h.cmd.Stdout, h.cmd.Stderr = h.stderr, h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() { h.stop(t) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := h.client.Get(h.Base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h
			}
		}
		select {
		case <-h.done:
			t.Fatalf("hub exited at start: %v\n%s", h.cmd.ProcessState, h.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub did not come up: %v\n%s", err, h.stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // another process: nothing to wait on but its port
	}
}

func (h *Hub) stop(t *testing.T) {
	select {
	case <-h.done:
	default:
		h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			h.cmd.Process.Kill()
			<-h.done
		}
	}
	h.client.CloseIdleConnections()
	if t.Failed() {
		t.Logf("hub output:\n%s", h.stderr.String())
	}
}

// Logs is everything the hub wrote so far.
func (h *Hub) Logs() string { return h.stderr.String() }

// logLines counts the hub's log lines so far.
func (h *Hub) logLines() int { return strings.Count(h.stderr.String(), "\n") }

// rssKB is the hub's resident set in KiB, from /proc/<pid>/status.
func (h *Hub) rssKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// dirBytes is the size of the files under the hub's data dir.
func (h *Hub) dirBytes(t *testing.T) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(h.Dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil // a file the engine removed meanwhile
		}
		if !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// call sends one request to the hub's API and returns the status, the
// body and the headers.
func (h *Hub) call(t *testing.T, method, path, key, body string) (int, string, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.Base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	// Every answer, to an attack too, is one docs/hub-openapi.yaml
	// describes.
	spec, err := apispec.LoadHub()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Check(req, resp.StatusCode, resp.Header, b); err != nil {
		t.Error(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// hubErrCode is the code of an error answer, "" when the body is not one.
func hubErrCode(body string) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(body), &e)
	return e.Error.Code
}

// hubAgent is a hand-made agent on the hub's websocket.
type hubAgent struct {
	ws *websocket.Conn
}

// dialHub opens /agent/v1 with token and agentID and returns the
// handshake's status (101 when it opened) and the connection.
func dialHub(t *testing.T, h *Hub, token, agentID string) (int, *hubAgent) {
	t.Helper()
	hdr := http.Header{}
	hdr.Set(wire.HeaderAuthorization, "Bearer "+token)
	hdr.Set(wire.HeaderAgent, agentID)
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: 15 * time.Second}
	ws, resp, err := d.Dial(h.WS, hdr)
	if err != nil {
		if resp == nil {
			t.Fatalf("dial the hub: %v", err)
		}
		return resp.StatusCode, nil
	}
	ws.SetReadLimit(wire.ReadLimit)
	t.Cleanup(func() { ws.Close() })
	return resp.StatusCode, &hubAgent{ws: ws}
}

// helloHub dials and says hello, and returns the agent once welcomed.
func helloHub(t *testing.T, h *Hub, token, agentID string) *hubAgent {
	t.Helper()
	status, a := dialHub(t, h, token, agentID)
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("handshake of %s: %d, want 101", agentID, status)
	}
	a.send(t, &wire.Hello{AgentID: agentID, Version: "hostile"})
	m := a.next(t, 15*time.Second)
	if _, ok := m.(*wire.Welcome); !ok {
		t.Fatalf("after hello: %T %+v, want welcome", m, m)
	}
	return a
}

func (a *hubAgent) send(t *testing.T, m wire.Message) {
	t.Helper()
	f, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	a.raw(t, websocket.TextMessage, f)
}

func (a *hubAgent) raw(t *testing.T, mt int, f []byte) {
	t.Helper()
	a.ws.SetWriteDeadline(time.Now().Add(15 * time.Second))
	if err := a.ws.WriteMessage(mt, f); err != nil {
		t.Fatalf("write a frame: %v", err)
	}
}

// next reads the next frame (pings are answered by gorilla); it fails the
// test after d or when the connection ends.
func (a *hubAgent) next(t *testing.T, d time.Duration) wire.Message {
	t.Helper()
	m, err := a.read(d)
	if err != nil {
		t.Fatalf("read a frame: %v", err)
	}
	return m
}

func (a *hubAgent) read(d time.Duration) (wire.Message, error) {
	a.ws.SetReadDeadline(time.Now().Add(d))
	_, data, err := a.ws.ReadMessage()
	if err != nil {
		return nil, err
	}
	return wire.Decode(data)
}

// until reads frames until one for which ok is true, failing after d.
func (a *hubAgent) until(t *testing.T, d time.Duration, ok func(wire.Message) bool) wire.Message {
	t.Helper()
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			t.Fatal("no awaited frame in time")
		}
		m := a.next(t, left)
		if ok(m) {
			return m
		}
	}
}
