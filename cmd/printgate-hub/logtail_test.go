package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/internal/apispec"
	"printgate/internal/proctest"
)

// sseEvent is one server-sent event of the log tail.
type sseEvent struct{ event, data string }

// readEvents reads the stream's events onto a channel until it ends.
func readEvents(resp *http.Response) <-chan sseEvent {
	ch := make(chan sseEvent, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.event != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

// TestLogTailOfRealAgent runs the real hub and the real agent (binaries)
// and follows the agent's log through GET /v1/stores/{store}/logs: the
// recent lines come first, a job submitted to the hub shows in the
// agent's lines as it happens, a third tail of the store is 429
// too_many_tails, the agent SIGKILLed ends the stream with
// agent_offline, and a tail of the offline agent is 409 not_connected.
// Every answer is held to docs/hub-openapi.yaml.
func TestLogTailOfRealAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binaries")
	}
	spec, err := apispec.LoadHub()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: spec.Transport(nil, func(err error) { t.Error(err) })}
	defer client.CloseIdleConnections()
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
	if err := os.WriteFile(hubConfig, []byte(fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\n", filepath.Join(dir, "hub"), hubPort)), 0o600); err != nil {
		t.Fatal(err)
	}
	hubCmd(t, hubBin, "tenant", "add", "--config", hubConfig, "--id", "acme")
	hubCmd(t, hubBin, "store", "add", "--config", hubConfig, "--tenant", "acme", "--id", "s1")
	key := hubCmd(t, hubBin, "key", "add", "--config", hubConfig, "--tenant", "acme")
	token := hubCmd(t, hubBin, "device", "add", "--config", hubConfig, "--store", "s1")
	agentDir := filepath.Join(dir, "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(agentDir, "device-token"), []byte(token+"\n"), 0o600); err != nil {
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
	defer hub.kill(t)
	agent := start(t, agentBase, agentBin, "run", "--config", agentConfig)
	defer func() {
		if agent != nil {
			agent.kill(t)
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var sv storeView
		if api(t, "GET", hubBase+"/v1/stores/s1", key, "", &sv) == http.StatusOK && sv.Online {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not come online\nhub:\n%s\nagent:\n%s", hub.logs.String(), agent.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // other processes
	}

	tail := func(query string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", hubBase+"/v1/stores/s1/logs"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := tail("?tail=50")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("tail: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readEvents(resp)
	// waitLine waits for a line holding want, returning the lines seen.
	waitLine := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("the stream ended before a line with %q", want)
				}
				if ev.event == "line" && strings.Contains(ev.data, want) {
					return
				}
				if ev.event != "line" && ev.event != "dropped" {
					t.Fatalf("event %s %s before a line with %q", ev.event, ev.data, want)
				}
			case <-timeout:
				t.Fatalf("no line with %q in 30 s\nagent:\n%s", want, agent.logs.String())
			}
		}
	}
	waitLine("cloud link online") // a recent line, from before the tail
	var ans map[string]any
	if code := api(t, "POST", hubBase+"/v1/stores/s1/jobs", key, `{"task_no":"LOG-1_K_v1","printer":"k","document":{"lines":[{"text":"hello"}]}}`, &ans); code != http.StatusAccepted {
		t.Fatalf("submit: %d %v", code, ans)
	}
	waitLine("LOG-1_K_v1") // the agent's own line about the job, live

	second := tail("?tail=0&level=warn")
	defer second.Body.Close()
	if second.StatusCode != http.StatusOK {
		t.Fatalf("a second tail: %d", second.StatusCode)
	}
	third := tail("")
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	json.NewDecoder(third.Body).Decode(&e)
	third.Body.Close()
	if third.StatusCode != http.StatusTooManyRequests || e.Error.Code != "too_many_tails" || third.Header.Get("Retry-After") == "" {
		t.Errorf("a third tail of the store: %d %+v; want 429 too_many_tails with Retry-After", third.StatusCode, e)
	}
	if bad := tail("?tail=5000"); bad.StatusCode != http.StatusBadRequest {
		t.Errorf("tail=5000: %d; want 400", bad.StatusCode)
		bad.Body.Close()
	} else {
		bad.Body.Close()
	}

	agent.kill(t)
	agent = nil
	timeout := time.After(90 * time.Second)
	for ended := false; !ended; {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended without an end event")
			}
			if ev.event == "end" {
				var end struct{ Reason, Message string }
				if err := json.Unmarshal([]byte(ev.data), &end); err != nil || end.Reason != "agent_offline" {
					t.Fatalf("end %s; want reason agent_offline", ev.data)
				}
				ended = true
			}
		case <-timeout:
			t.Fatal("no end event 90 s after the agent was killed")
		}
	}
	off := tail("")
	json.NewDecoder(off.Body).Decode(&e)
	off.Body.Close()
	if off.StatusCode != http.StatusConflict || e.Error.Code != "not_connected" {
		t.Errorf("tail of the offline agent: %d %+v; want 409 not_connected", off.StatusCode, e)
	}
}
