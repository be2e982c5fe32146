package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// Every CLI failure a person reads says what happened, in the
// "FILE:LINE: sentence" standard where a config key is the cause, and ends
// with a "fix:" line. These run the real binary, as a person does.

// runBinary runs the printgate binary bin with args and returns its exit
// code and output.
func runBinary(t *testing.T, bin string, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("%s: %v", bin, err)
	return 0, "", ""
}

// wantFix fails the test unless text has a line matching msg and, on a line
// of its own after it, "fix: " and fix.
func wantFix(t *testing.T, what, text, msg, fix string) {
	t.Helper()
	m := regexp.MustCompile(msg).FindStringIndex(text)
	if m == nil {
		t.Errorf("%s: no %q in\n%s", what, msg, text)
		return
	}
	if !strings.Contains(text[m[1]:], "\nfix: "+fix) {
		t.Errorf("%s: no line \"fix: %s\" after the message in\n%s", what, fix, text)
	}
}

// TestFixStartWithoutSystemd ensures `printgate start` on a machine
// without systemd says the service needs it and how to run the agent
// instead (it said "Failed to start printgate print agent: exit status 1").
func TestFixStartWithoutSystemd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd is Linux's")
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here: start would start a service")
	}
	bin := buildPrintgate(t)
	config, _, _, _ := promiseSetup(t)
	code, _, errs := runBinary(t, bin, exec.Command(bin, "start", "--config", config))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantFix(t, "start", errs, `printgate start: the service was not started: it needs systemd, and systemd is not running on this machine`,
		"run the agent in the foreground instead: ")
	if !strings.Contains(errs, "printgate run --config "+config) {
		t.Errorf("the fix does not name printgate run with the config:\n%s", errs)
	}
}

// TestFixStopWithoutSystemd ensures `printgate stop` on a machine without
// systemd, where the agent was started by hand, says how to stop that agent
// and names its process (it advised running the agent in the foreground,
// which is what was already running).
func TestFixStopWithoutSystemd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd is Linux's")
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here: stop would stop a service")
	}
	bin := buildPrintgate(t)
	config, _, base, _ := promiseSetup(t)
	realAgent(t, config, base)
	code, _, errs := runBinary(t, bin, exec.Command(bin, "stop", "--config", config))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantFix(t, "stop", errs, `printgate stop: the service was not stopped: it needs systemd`,
		"stop the agent where it runs (Ctrl-C in its terminal), or: ")
	if !regexp.MustCompile(`kill \d+ \(the agent, printgate \(pid \d+\), holds 127\.0\.0\.1:\d+\)`).MatchString(errs) {
		t.Errorf("the fix does not name the agent's process:\n%s", errs)
	}
	if strings.Contains(errs, "foreground") {
		t.Errorf("stop advises running the agent, which runs already:\n%s", errs)
	}
}

// TestFixStatusWrongToken ensures `status` with a token the running agent
// does not hold says that the token the command read is not the agent's,
// where it read it, and what to do (it said the agent answered 401, check
// the POS configuration).
func TestFixStatusWrongToken(t *testing.T) {
	bin := buildPrintgate(t)
	config, dir, base, _ := promiseSetup(t)
	realAgent(t, config, base)
	body, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.toml")
	if err := os.WriteFile(other, bytes.Replace(body, []byte(promiseToken), []byte("another-token-0123456789abcdef"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runBinary(t, bin, exec.Command(bin, "status", "--config", other))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantFix(t, "status", out, regexp.QuoteMeta("refused the API token this command read from the api_token in "+other+":3: it is not the token the running agent read"),
		"if the token changed since the agent started, restart it")
}

// TestFixRunPortTaken ensures `run` on a taken port names the config's
// listen line and who holds the port: another printgate agent, or another
// program with its process id (it gave the OS error only).
func TestFixRunPortTaken(t *testing.T) {
	bin := buildPrintgate(t)
	config, _, base, _ := promiseSetup(t)
	second := func(listen string) string {
		t.Helper()
		body, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		s := regexp.MustCompile(`(?m)^data_dir = .*$`).ReplaceAllString(string(body), fmt.Sprintf("data_dir = %q", dir))
		s = regexp.MustCompile(`(?m)^listen = .*$`).ReplaceAllString(s, fmt.Sprintf("listen = %q", listen))
		path := filepath.Join(dir, "printgate.toml")
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	realAgent(t, config, base)
	addr := strings.TrimPrefix(base, "http://")
	cfg2 := second(addr)
	code, _, errs := runBinary(t, bin, exec.Command(bin, "run", "--config", cfg2))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if runtime.GOOS == "linux" {
		wantFix(t, "printgate holds it", errs, regexp.QuoteMeta("printgate run: "+cfg2+":2: listen: "+addr+" is taken by another printgate agent, printgate (pid ")+`\d+\)`,
			"stop that agent (sudo printgate stop, or Ctrl-C where it runs)")
	} else {
		wantFix(t, "printgate holds it", errs, regexp.QuoteMeta(cfg2+":2: listen: "+addr+" is taken by another program"), "stop it")
	}

	// This test's own process holds the next one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr = ln.Addr().String()
	cfg3 := second(addr)
	code, _, errs = runBinary(t, bin, exec.Command(bin, "run", "--config", cfg3))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if runtime.GOOS == "linux" {
		comm, _ := os.ReadFile("/proc/self/comm")
		holder := fmt.Sprintf("%s (pid %d)", strings.TrimSpace(string(comm)), os.Getpid())
		wantFix(t, "another program holds it", errs, regexp.QuoteMeta(cfg3+":2: listen: "+addr+" is taken by another program, "+holder), "stop "+holder)
	}
}

// TestFixStatusSilentPort ensures `status` against an address where a
// program takes connections and answers nothing says so and names that
// program (it said "not answering: context deadline exceeded", no fix).
func TestFixStatusSilentPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Hold the connection, say nothing, until the test ends.
			go func() { <-done; c.Close() }()
		}
	}()
	dir := t.TempDir()
	config := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = %q\napi_token = %q\n", dir, ln.Addr().String(), promiseToken)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := buildPrintgate(t)
	code, out, errs := runBinary(t, bin, exec.Command(bin, "status", "--config", config))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	text := out + errs
	if strings.Contains(text, "context deadline exceeded") {
		t.Errorf("status shows Go's words, not a person's:\n%s", text)
	}
	wantFix(t, "status", text, `took the connection but did not answer: another program holds the agent's port`, "")
	// The test binary itself holds the port: where /proc can name it, the
	// fix does.
	if runtime.GOOS == "linux" && !strings.Contains(text, fmt.Sprintf("(pid %d) holds port", os.Getpid())) {
		t.Errorf("the fix does not name the program on the port (pid %d):\n%s", os.Getpid(), text)
	}
}
