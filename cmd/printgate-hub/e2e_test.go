package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/internal/apispec"
	"printgate/internal/proctest"
	"printgate/sync/pair"
)

// buildBin compiles a command of the module into dir.
func buildBin(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// proc is one run of a binary under test.
type proc struct {
	cmd  *exec.Cmd
	logs *proctest.Buffer
}

// start runs bin with args and waits until base/healthz answers 200.
func start(t *testing.T, base, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), logs: &proctest.Buffer{}}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			p.cmd.Process.Kill()
			p.cmd.Wait()
			t.Fatalf("%s did not come up: %v\n%s", filepath.Base(bin), err, p.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // another process: nothing to wait on but its port
	}
}

// kill SIGKILLs the process and checks it was still running.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("%s exited on its own before the kill: %v\n%s", p.cmd.Path, p.cmd.ProcessState, p.logs.String())
	}
}

// hubCmd runs a printgate-hub command to its end and returns its stdout.
func hubCmd(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("printgate-hub %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// jobState is the part of GET /v1/stores/{store}/jobs/{task_no} the test reads.
type jobState struct {
	State        string `json:"state"`
	Confirmation string `json:"confirmation"`
	Origin       string `json:"origin"`
	Timeline     []struct {
		N     int    `json:"n"`
		State string `json:"state"`
	} `json:"timeline"`
}

// storeView is the part of GET /v1/stores/{store} the test reads.
type storeView struct {
	Online   bool   `json:"online"`
	Version  string `json:"version"`
	LastDrop string `json:"last_drop"`
	Printers []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	} `json:"printers"`
	Backlog int `json:"backlog"`
	Oldest  *struct {
		TaskNo string `json:"task_no"`
	} `json:"oldest_waiting"`
}

// api calls the hub's order API with key and decodes the answer into v.
// Every answer is held to docs/hub-openapi.yaml.
func api(t *testing.T, method, url, key, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	spec, err := apispec.LoadHub()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: spec.Transport(http.DefaultTransport, func(err error) { t.Error(err) })}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// TestHubPrintsThroughRealAgent runs the real hub and the real agent
// (both binaries) with an emulated printer on loopback and ensures: `printgate
// pair` pairs through the hub, approved with the tenant's API key; a job
// submitted to the hub's API is answered 202, prints once, and reaches
// PRINTED with its timeline (the hub's STORED, then the agent's events);
// the same task_no again is 200 duplicate with that state and prints
// nothing; a job submitted while the agent is down waits STORED, survives
// the hub being SIGKILLed and restarted, and prints once when the agent
// returns; revoking the store's devices sends the agent back to pairing.
func TestHubPrintsThroughRealAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binaries")
	}
	defer http.DefaultClient.CloseIdleConnections()
	dir := t.TempDir()
	hubBin := buildBin(t, dir, "printgate-hub", ".")
	agentBin := buildBin(t, dir, "printgate", "printgate/cmd/printgate")

	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	hubPort := proctest.FreePort(t)
	hubBase := fmt.Sprintf("http://127.0.0.1:%d", hubPort)
	hubConfig := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(hubConfig, []byte(fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\nlog_level = \"debug\"\n", filepath.Join(dir, "hub"), hubPort)), 0o600); err != nil {
		t.Fatal(err)
	}
	hubCmd(t, hubBin, "tenant", "add", "--config", hubConfig, "--id", "acme")
	hubCmd(t, hubBin, "store", "add", "--config", hubConfig, "--tenant", "acme", "--id", "s1")
	key := hubCmd(t, hubBin, "key", "add", "--config", hubConfig, "--tenant", "acme")
	if tok := hubCmd(t, hubBin, "device", "add", "--config", hubConfig, "--store", "s1"); !strings.HasPrefix(tok, "pgd_") {
		t.Fatalf("device add printed %q, want a device token", tok)
	}
	sink := &hookSink{}
	hookSrv := httptest.NewServer(sink)
	defer hookSrv.Close()
	sink.secret = hubCmd(t, hubBin, "webhook", "add", "--config", hubConfig, "--tenant", "acme", "--url", hookSrv.URL+"/hook")

	agentDir := filepath.Join(dir, "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	agentPort := proctest.FreePort(t)
	agentBase := fmt.Sprintf("http://127.0.0.1:%d", agentPort)
	agentConfig := filepath.Join(dir, "printgate.toml")
	if err := os.WriteFile(agentConfig, []byte(fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = \"agent-token-0123456789abcdef\"\n[cloud]\nurl = \"ws://127.0.0.1:%d/agent/v1\"\nauth_url = \"%s/oauth\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n",
		agentDir, agentPort, hubPort, hubBase, p.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}

	hub := start(t, hubBase, hubBin, "run", "--config", hubConfig)
	defer func() {
		if hub != nil {
			hub.kill(t)
		}
	}()

	// Pairing: `printgate pair` shows a code; the tenant approves it for
	// store s1 with its API key.
	out := &proctest.Buffer{}
	pairCmd := exec.Command(agentBin, "pair", "--config", agentConfig)
	pairCmd.Stdout, pairCmd.Stderr = out, out
	if err := pairCmd.Start(); err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile(`code: (\S+)`)
	for deadline := time.Now().Add(30 * time.Second); !code.MatchString(out.String()); {
		if time.Now().After(deadline) {
			pairCmd.Process.Kill()
			t.Fatalf("pair showed no code:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond) // another process's output
	}
	var approved map[string]any
	if st := api(t, "POST", hubBase+"/v1/stores/s1/pairings/"+code.FindStringSubmatch(out.String())[1]+"/approve", key, "", &approved); st != http.StatusOK {
		t.Fatalf("approve: %d %v", st, approved)
	}
	if err := pairCmd.Wait(); err != nil {
		t.Fatalf("pair: %v\n%s", err, out.String())
	}
	if _, err := pair.Load(agentDir); err != nil {
		t.Fatalf("no device token after pairing: %v\n%s", err, out.String())
	}
	agent := start(t, agentBase, agentBin, "run", "--config", agentConfig)
	defer func() {
		if agent != nil {
			agent.kill(t)
		}
	}()

	jobs := hubBase + "/v1/stores/s1/jobs"
	submit := func(no string) (int, map[string]any) {
		var ans map[string]any
		body := fmt.Sprintf(`{"task_no":%q,"printer":"k","document":{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}}`, no, no)
		return api(t, "POST", jobs, key, body, &ans), ans
	}
	waitState := func(no, want string) jobState {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var js jobState
			code := api(t, "GET", jobs+"/"+no, key, "", &js)
			if code == http.StatusOK && js.State == want {
				return js
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d state %q, want %s\nhub:\n%s\nagent:\n%s", no, code, js.State, want, hub.logs.String(), agent.logs.String())
			}
			time.Sleep(20 * time.Millisecond) // other processes
		}
	}

	// Submit, print once, PRINTED with the whole timeline.
	if code, ans := submit("ORD-1_K_v1"); code != http.StatusAccepted || ans["state"] != "STORED" || ans["duplicate"] != false {
		t.Fatalf("submit: %d %v; want 202 STORED", code, ans)
	}
	js := waitState("ORD-1_K_v1", "PRINTED")
	var steps []string
	for _, e := range js.Timeline {
		steps = append(steps, e.State)
	}
	if js.Confirmation == "" || js.Origin != "cloud" || len(steps) < 3 || steps[0] != "STORED" || steps[len(steps)-1] != "PRINTED" {
		t.Errorf("ORD-1: confirmation %q, origin %q, timeline %v; want a confirmation, cloud, STORED ... PRINTED", js.Confirmation, js.Origin, steps)
	}
	if code, ans := submit("ORD-1_K_v1"); code != http.StatusOK || ans["duplicate"] != true || ans["state"] != "PRINTED" {
		t.Errorf("resubmit: %d %v; want 200 duplicate PRINTED", code, ans)
	}
	var sv storeView
	if code := api(t, "GET", hubBase+"/v1/stores/s1", key, "", &sv); code != http.StatusOK || !sv.Online || sv.Version == "" ||
		len(sv.Printers) != 1 || sv.Printers[0].Name != "k" || sv.Backlog != 0 {
		t.Errorf("store view with the agent online: %d %+v; want online, its version, printer k, no backlog", code, sv)
	}

	// The agent goes down; a job waits on the hub's disk through a SIGKILL
	// of the hub.
	agent.kill(t)
	agent = nil
	if code, ans := submit("ORD-2_K_v1"); code != http.StatusAccepted {
		t.Fatalf("submit with the agent down: %d %v", code, ans)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		sv = storeView{}
		code := api(t, "GET", hubBase+"/v1/stores/s1", key, "", &sv)
		if code == http.StatusOK && !sv.Online && sv.Backlog == 1 && sv.Oldest != nil && sv.Oldest.TaskNo == "ORD-2_K_v1" && sv.LastDrop != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store view with the agent killed: %d %+v; want offline, why, a backlog of ORD-2", code, sv)
		}
		time.Sleep(20 * time.Millisecond) // the hub sees the socket close
	}
	hub.kill(t)
	hub = start(t, hubBase, hubBin, "run", "--config", hubConfig)
	if js := waitState("ORD-2_K_v1", "STORED"); len(js.Timeline) != 1 {
		t.Errorf("ORD-2 after the hub's restart: timeline %+v; want STORED alone", js.Timeline)
	}
	waitState("ORD-1_K_v1", "PRINTED")
	agent = start(t, agentBase, agentBin, "run", "--config", agentConfig)
	waitState("ORD-2_K_v1", "PRINTED")
	// Every state change reached the tenant's webhook, signed, across the
	// hub's SIGKILL.
	sink.wait(t, "ORD-1_K_v1 STORED", "ORD-1_K_v1 PRINTED", "ORD-2_K_v1 STORED", "ORD-2_K_v1 PRINTED")

	plain, marked := printertest.Copies(p.Tickets(), "TICKET", "POSSIBLE DUPLICATE")
	for _, no := range []string{"ORD-1_K_v1", "ORD-2_K_v1"} {
		if plain[no] != 1 || marked[no] != 0 {
			t.Errorf("%s on paper: %d plain, %d marked; want exactly 1", no, plain[no], marked[no])
		}
	}

	// A reprint through the order API, under the caller's id: the agent
	// answers with the new version, which prints and reports PRINTED; the
	// same id again is answered with that result, not run again.
	var cmd struct {
		Sent   int `json:"sent"`
		Result *struct {
			OK     bool   `json:"ok"`
			TaskNo string `json:"task_no"`
		} `json:"result"`
	}
	if st := api(t, "POST", jobs+"/ORD-1_K_v1/reprint", key, `{"id":"rp-1"}`, &cmd); st != http.StatusAccepted || cmd.Sent != 1 {
		t.Fatalf("reprint: %d %+v; want 202 sent once", st, cmd)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		cmd.Result = nil
		api(t, "GET", hubBase+"/v1/stores/s1/commands/rp-1", key, "", &cmd)
		if cmd.Result != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result for the reprint\nhub:\n%s", hub.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // other processes
	}
	if !cmd.Result.OK || cmd.Result.TaskNo != "ORD-1_K_v2" {
		t.Fatalf("reprint result %+v; want ok with ORD-1_K_v2", cmd.Result)
	}
	waitState("ORD-1_K_v2", "PRINTED")
	if st := api(t, "POST", jobs+"/ORD-1_K_v1/reprint", key, `{"id":"rp-1"}`, &cmd); st != http.StatusOK || cmd.Sent != 1 || cmd.Result == nil || cmd.Result.TaskNo != "ORD-1_K_v2" {
		t.Fatalf("reprint resent under its id: %d %+v; want 200 with the first result, not sent again", st, cmd)
	}

	// The store's devices are revoked: the agent gets the revoke frame,
	// forgets its token and goes back to pairing.
	var revoked map[string]any
	if st := api(t, "POST", hubBase+"/v1/stores/s1/revoke", key, "", &revoked); st != http.StatusOK || revoked["revoked"] != float64(2) || revoked["connected"] != true {
		t.Fatalf("revoke: %d %v; want both tokens (device add's, the pairing's) revoked, the agent connected", st, revoked)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := pair.Load(agentDir); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent kept its revoked token\nagent:\n%s", agent.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // another process's file
	}
}
