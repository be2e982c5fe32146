package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"printgate/drivers/printertest"
	"printgate/spool"
)

// promiseSetup writes a config for one emulated printer "k" and returns the
// config path, the data dir and the API base URL.
func promiseSetup(t *testing.T) (config, dir, base string, p *printertest.Printer) {
	t.Helper()
	dir = t.TempDir()
	p = printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	port := freePort(t)
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	config = filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n", dir, port, promiseToken, p.Addr())
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, dir, base, p
}

const promiseToken = "promise-test-token-0123456789"

// spoolTasks accepts tasks for printer k straight into the spool at dir, as
// a previous run would have left them.
func spoolTasks(t *testing.T, dir string, taskNos ...string) {
	t.Helper()
	sp, err := spool.Open(filepath.Join(dir, "spool.db"), spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for _, no := range taskNos {
		doc := fmt.Sprintf(`{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}`, no)
		if _, _, err := sp.Accept(spool.NewTask{TaskNo: no, Printer: "k", Document: []byte(doc), Timeout: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
}

// damage edits the closed spool file with bbolt, as disk damage would.
func damage(t *testing.T, dir string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "spool.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

type taskState struct {
	State  string `json:"state"`
	Reason string `json:"reason"`
}

// waitState polls the API (the agent is another process) until taskNo is
// in state, bounded.
func waitState(t *testing.T, base, token, taskNo, state string) taskState {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var v taskState
	for {
		req, _ := http.NewRequest("GET", base+"/api/v1/tasks/"+taskNo, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			v = taskState{}
			json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if v.State == state {
				return v
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %+v, want %s", taskNo, v, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCorruptRecordFailsOnlyItsTask starts the real binary on a spool where
// one task's record is garbage: that task ends FAILED with reason
// CORRUPT_RECORD, the others print, and new work is taken and printed.
func TestCorruptRecordFailsOnlyItsTask(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildPrintgate(t)
	config, dir, base, p := promiseSetup(t)
	spoolTasks(t, dir, "GOOD1_v1", "BAD_v1", "GOOD2_v1")
	damage(t, dir, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("tasks")).Put([]byte("BAD_v1"), []byte(`{"task_no":"BAD_v1","state":`))
	})
	proc := startAgent(t, bin, config, base)
	defer proc.kill(t)
	if got := waitState(t, base, promiseToken, "BAD_v1", "FAILED"); got.Reason != "CORRUPT_RECORD" {
		t.Errorf("corrupt task: %+v, want FAILED CORRUPT_RECORD", got)
	}
	waitState(t, base, promiseToken, "GOOD1_v1", "PRINTED")
	waitState(t, base, promiseToken, "GOOD2_v1", "PRINTED")
	if code := submit(base, promiseToken, "NEW_v1", "k"); code != http.StatusAccepted {
		t.Fatalf("submit after restore: %d", code)
	}
	waitState(t, base, promiseToken, "NEW_v1", "PRINTED")
	if code := submit(base, promiseToken, "BAD_v1", "k"); code != http.StatusOK {
		t.Errorf("resubmitting the corrupt task's task_no: %d, want 200 duplicate", code)
	}
	// Documents the printer cannot print are refused at intake, naming
	// the line: a parse error, and text its encoding lacks.
	for _, tc := range []struct{ doc, want string }{
		{`{"lines":[{"text":"ok"},{"bogus":1}]}`, "line 2"},
		{`{"lines":[{"text":"宫保鸡丁"}]}`, "WPC1252"},
	} {
		body := `{"task_no":"DOC_v1","printer":"k","document":` + tc.doc + `}`
		req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+promiseToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Error.Code != "bad_document" || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("document %s: %d %+v, want 400 bad_document naming %q", tc.doc, resp.StatusCode, e.Error, tc.want)
		}
	}
	var printed []string
	for _, tk := range p.Tickets() {
		for _, l := range tk.Lines {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "TICKET" {
				printed = append(printed, f[1])
			}
		}
	}
	if strings.Join(printed, " ") != "GOOD1_v1 GOOD2_v1 NEW_v1" {
		t.Errorf("printed %v", printed)
	}
	if !strings.Contains(proc.logs.String(), "task record is corrupt") {
		t.Errorf("no log line names the corrupt record:\n%s", proc.logs.String())
	}
}

// TestUnrestorableSpoolExitsNonZero starts the real binary on a spool whose
// queue index holds a key the agent cannot read: the core cannot restore, so the agent must not serve
// (it would accept tasks nobody prints) and must exit non-zero with the
// cause in its log, for the service manager to restart and alert.
func TestUnrestorableSpoolExitsNonZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildPrintgate(t)
	config, dir, base, _ := promiseSetup(t)
	spoolTasks(t, dir, "A_v1")
	damage(t, dir, func(tx *bolt.Tx) error { return tx.Bucket([]byte("queue")).Put([]byte("no-separator"), []byte("A_v1")) })
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, "run", "--config", config)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 {
			t.Errorf("exit: %v, want exit code 1\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("agent kept running on a spool it cannot restore\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "could not start") || !strings.Contains(logs.String(), "restore") {
		t.Errorf("log does not say why:\n%s", logs.String())
	}
	if resp, err := http.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("something still answers on the agent's port")
	}
}
