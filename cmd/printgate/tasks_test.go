package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/agent/tlscert"
	"printgate/drivers/printertest"
)

// realAgent builds printgate and runs `printgate run --config config` until
// the test ends, and waits until it answers /healthz at base (http or
// https). The agent runs as its own process, as in the field; in-process
// it would leave its log rotator's goroutine behind for goleak.
func realAgent(t *testing.T, config, base string) *lockedBuffer {
	t.Helper()
	bin := buildPrintgate(t)
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, "run", "--config", config)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Readiness only: the agent's certificate, if any, is not checked here.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return logs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not come up: %v\n%s", err, logs.String())
		}
		// The agent is another process: nothing to wait on but its port.
		time.Sleep(20 * time.Millisecond)
	}
}

// runCmd runs a registered command in-process and returns its exit code
// and output.
func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestAPICommands runs test-print, tasks and reprint against a real agent
// with an emulated printer: the test ticket comes out with the printer's
// profile and the agent version, the table lists the tasks newest first
// with filters, and a reprint is accepted as _v2 and printed.
func TestAPICommands(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	config, _, base, p := promiseSetup(t)
	realAgent(t, config, base)
	for _, no := range []string{"A_v1", "B_v1"} {
		if c := submit(base, promiseToken, no, "k"); c != http.StatusAccepted {
			t.Fatalf("submit %s: %d", no, c)
		}
		waitState(t, base, promiseToken, no, "PRINTED")
	}

	code, out, errs := runCmd("test-print", "k", "--config", config)
	if code != 0 {
		t.Fatalf("test-print: exit %d\n%s%s", code, out, errs)
	}
	m := regexp.MustCompile(`(?m)^(TEST_k_\d{8}-\d{6})$`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "\nPRINTED on k (confirmation: printed)") {
		t.Fatalf("test-print output:\n%s", out)
	}
	testNo := m[1]
	// The printer's state reads as the printer's, not as the task's
	// ("(state READY)" read like the task's).
	if !regexp.MustCompile(`waiting for `+testNo+` to print on k \(printer k (is ready|has not been read yet: the ticket prints once it is ready)\)`).MatchString(out) || strings.Contains(out, "(state ") {
		t.Errorf("test-print does not say the printer's state in words:\n%s", out)
	}
	var ticket string
	for _, tk := range p.Tickets() {
		if s := strings.Join(tk.Lines, "\n"); strings.Contains(s, "PRINTGATE TEST") {
			ticket = s
		}
	}
	for _, want := range []string{"epson-80", "576 dots, 48 columns", "dev", "printed (ack process-id)", testNo, "123456789012345678901234567890123456789012345678"} {
		if !strings.Contains(ticket, want) {
			t.Errorf("test ticket lacks %q:\n%s", want, ticket)
		}
	}

	code, out, errs = runCmd("tasks", "--config", config)
	if code != 0 {
		t.Fatalf("tasks: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TASK_NO") || !strings.HasPrefix(lines[1], testNo) ||
		!strings.HasPrefix(lines[2], "B_v1") || !strings.HasPrefix(lines[3], "A_v1") {
		t.Fatalf("tasks: want the header then %s, B_v1, A_v1:\n%s", testNo, out)
	}
	if f := strings.Fields(lines[3]); len(f) < 6 || f[1] != "PRINTED" || f[2] != "k" || f[3] != "local" || f[4] != "1" {
		t.Errorf("tasks row %q: want A_v1 PRINTED k local 1 <accepted>", lines[3])
	}
	if code, out, _ := runCmd("tasks", "--config", config, "-n", "1"); code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, testNo) {
		t.Errorf("tasks -n 1: exit %d\n%s", code, out)
	}
	if code, out, _ := runCmd("tasks", "--config", config, "--state", "queued"); code != 0 || out != "no tasks\n" {
		t.Errorf("tasks --state queued: exit %d %q", code, out)
	}
	if code, _, errs := runCmd("tasks", "--config", config, "--state", "NOPE"); code != 2 || !strings.Contains(errs, `state "NOPE" is not one of`) {
		t.Errorf("tasks --state NOPE: exit %d %q", code, errs)
	}

	code, out, errs = runCmd("reprint", "A_v1", "--config", config)
	if code != 0 || out != "A_v2 ACCEPTED (reprint of A_v1 on k)\n" {
		t.Fatalf("reprint: exit %d %q %q", code, out, errs)
	}
	waitState(t, base, promiseToken, "A_v2", "PRINTED")
	if code, _, errs := runCmd("reprint", "--config", config, "NOSUCH_v1"); code != 1 || !strings.Contains(errs, "NOSUCH_v1: the agent answered 404 not_found") {
		t.Errorf("reprint of an unknown task: exit %d %q", code, errs)
	}
}

// TestTestPrintNotPrinted ensures test-print exits 1 with the task's state
// and reason when the printer cannot print within --wait.
func TestTestPrintNotPrinted(t *testing.T) {
	config, _, base, p := promiseSetup(t)
	if err := p.SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	realAgent(t, config, base)
	code, out, errs := runCmd("test-print", "--wait", "2s", "--config", config, "k")
	if code != 1 || !strings.Contains(out, "TEST_k_") || !regexp.MustCompile(`TEST_k_\S+ is (still )?(PARKED|TIMED_OUT|QUEUED)`).MatchString(errs) {
		t.Errorf("test-print on a printer out of paper: exit %d\n%s%s", code, out, errs)
	}
	if !regexp.MustCompile(`to print on k \(printer k (is out of paper|has not been read yet): the ticket prints once it is ready\)`).MatchString(out) {
		t.Errorf("test-print does not say the printer is out of paper:\n%s", out)
	}
}

// TestAPICommandsAgentDown ensures each API command says the agent is not
// running, naming its URL, and exits 1.
func TestAPICommandsAgentDown(t *testing.T) {
	config, _, base, _ := promiseSetup(t)
	want := "cannot reach the agent at " + base + ": is it running? (printgate run or the service)"
	for _, args := range [][]string{
		{"tasks", "--config", config},
		{"reprint", "X_v1", "--config", config},
		{"test-print", "k", "--config", config},
	} {
		code, _, errs := runCmd(args...)
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d %q, want 1 and %q", args, code, errs, want)
		}
		// And what to do.
		if !strings.Contains(errs, "\nfix: start the agent: ") {
			t.Errorf("%v: no fix line in %q", args, errs)
		}
	}
}

// TestAPICommandsUsage covers the usage errors (exit 2) and --help (0).
func TestAPICommandsUsage(t *testing.T) {
	config, _, _, _ := promiseSetup(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"reprint", "--config", config}, 2, "which task?"},
		{[]string{"reprint", "A", "B", "--config", config}, 2, `unexpected argument "B"`},
		{[]string{"test-print", "--config", config}, 2, "which printer?"},
		{[]string{"test-print", "nope", "--config", config}, 2, `has no printer "nope" (it has k)`},
		{[]string{"test-print", "k", "--wait", "0s", "--config", config}, 2, "bad --wait"},
		{[]string{"tasks", "-n", "0", "--config", config}, 2, "bad -n 0"},
		{[]string{"tasks", "extra", "--config", config}, 2, "unexpected argument"},
		{[]string{"tasks", "--help"}, 0, "usage: printgate tasks [--config FILE] [--state S] [--printer P] [-n N]"},
		{[]string{"reprint", "--help"}, 0, "usage: printgate reprint TASK_NO [--config FILE]"},
		{[]string{"test-print", "--help"}, 0, "usage: printgate test-print NAME [--config FILE] [--wait 30s]"},
		{[]string{"tasks", "--config", filepath.Join(t.TempDir(), "none.toml")}, 1, "no config at"},
	} {
		code, _, errs := runCmd(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d %q, want %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// TestAPIClientTLS ensures the commands reach an agent serving its
// self-signed certificate, pinned from its data dir, and refuse a server
// with another certificate.
func TestAPIClientTLS(t *testing.T) {
	config, dir, base, _ := promiseSetup(t)
	body, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("tls = \"self-signed\"\n"+string(body)), 0o600); err != nil {
		t.Fatal(err)
	}
	realAgent(t, config, strings.Replace(base, "http:", "https:", 1))
	if code, out, errs := runCmd("tasks", "--config", config); code != 0 || out != "no tasks\n" {
		t.Fatalf("tasks over TLS: exit %d %q %q", code, out, errs)
	}
	// Another certificate in the data dir: the served one no longer matches the pin.
	other := t.TempDir()
	if _, err := os.Stat(filepath.Join(dir, "cert.pem")); err != nil {
		t.Fatal(err)
	}
	otherCfg := filepath.Join(other, "printgate.toml")
	if err := os.WriteFile(otherCfg, []byte(strings.Replace("tls = \"self-signed\"\n"+string(body), fmt.Sprintf("data_dir = %q", dir), fmt.Sprintf("data_dir = %q", other), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tlscert.SelfSigned(other, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCmd("tasks", "--config", otherCfg); code != 1 || !strings.Contains(errs, "is not the agent's") {
		t.Errorf("tasks against a server with another certificate: exit %d %q", code, errs)
	}
}
