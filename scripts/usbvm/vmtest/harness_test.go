package vmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"printgate/internal/proctest"
	"strings"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// exe is the printgate binary under test (PRINTGATE_BIN, set by the VM's /init).
var exe = os.Getenv("PRINTGATE_BIN")

// gadget is the configfs directory of the VM's printer gadget (USBVM_GADGET).
var gadget = os.Getenv("USBVM_GADGET")

const (
	gadgetDev = "/dev/g_printer0"
	hostDev   = "/dev/usb/lp0"
	udc       = "dummy_udc.0"
)

// needVM skips t outside the VM that make test-usb boots.
func needVM(t *testing.T) {
	t.Helper()
	if exe == "" || gadget == "" {
		t.Skip("PRINTGATE_BIN and USBVM_GADGET are not set: these checks run inside the VM of make test-usb")
	}
}

// cableMode is how the checks pull the cable (USBVM_CABLE): "port" (the
// default) switches the hub port off and on, "authorized" de- and
// re-authorizes the device, "udc" unbinds the gadget from its UDC, "off"
// skips the cable checks. The host-side pulls are what usblp sees when a
// real cable comes out; "udc" also tears down the gadget (the test rig's
// side), which Debian 6.1's f_printer does not survive reliably (a kernel
// BUG at lib/list_debug.c in printer_write or rx_complete in about half the
// runs).
func cableMode() string {
	switch m := os.Getenv("USBVM_CABLE"); m {
	case "", "1":
		return "port"
	default:
		return m
	}
}

// needCable skips the cable-pull checks with USBVM_CABLE=off (or 0).
func needCable(t *testing.T) {
	t.Helper()
	if m := cableMode(); m == "off" || m == "0" {
		t.Skip("USBVM_CABLE=" + m + ": cable pulls skipped")
	}
}

// hostDevice is the printer's device directory in the host's sysfs
// (/sys/bus/usb/devices/1-1 on dummy_hcd's root hub), found by VID:PID.
func hostDevice(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, _ := filepath.Glob("/sys/bus/usb/devices/*/idVendor")
		for _, f := range ids {
			dir := filepath.Dir(f)
			v, _ := os.ReadFile(f)
			p, _ := os.ReadFile(filepath.Join(dir, "idProduct"))
			if strings.TrimSpace(string(v)) == "04b8" && strings.TrimSpace(string(p)) == "0e15" {
				return dir
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no USB device 04b8:0e15 in /sys/bus/usb/devices after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cable pulls the printer's cable out (in=false) or plugs it back (true),
// the way cableMode says. The pulled state remembers the hub port, which
// has no device under it while the cable is out.
type cable struct {
	mode string
	dev  string // the device's sysfs directory when it was pulled
	port string // its hub port's sysfs directory
}

func newCable(t *testing.T) *cable {
	t.Helper()
	c := &cable{mode: cableMode()}
	if c.mode != "udc" {
		c.dev = hostDevice(t)
		port, err := filepath.EvalSymlinks(filepath.Join(c.dev, "port"))
		if err != nil {
			t.Fatalf("the device %s has no hub port link: %v", c.dev, err)
		}
		c.port = port
	}
	return c
}

func (c *cable) set(t *testing.T, in bool) {
	t.Helper()
	var file, v string
	switch c.mode {
	case "udc":
		file, v = filepath.Join(gadget, "UDC"), "\n"
		if in {
			v = udc + "\n"
		}
	case "authorized":
		file, v = filepath.Join(c.dev, "authorized"), "0"
		if in {
			v = "1"
		}
	case "port":
		// The hub powers the port off (usb_disconnect, then no VBUS: the
		// gadget sees a disconnect) and on again (a new connection that
		// the hub enumerates), as when a cable is pulled and plugged.
		file, v = filepath.Join(c.port, "disable"), "1"
		if in {
			v = "0"
		}
	default:
		t.Fatalf("USBVM_CABLE=%q: want port, authorized, udc or off", c.mode)
	}
	if err := os.WriteFile(file, []byte(v), 0o644); err != nil {
		t.Fatalf("cable in=%v: write %q to %s: %v", in, strings.TrimSpace(v), file, err)
	}
}

// pull pulls the cable and waits for lp0 to go.
func (c *cable) pull(t *testing.T) {
	t.Helper()
	c.set(t, false)
	waitPath(t, hostDev, false, 5*time.Second)
}

// plug plugs the cable back and waits for lp0 (and, after a UDC unbind,
// g_printer0) to return.
func (c *cable) plug(t *testing.T) {
	t.Helper()
	c.set(t, true)
	waitPath(t, hostDev, true, 10*time.Second)
	waitPath(t, gadgetDev, true, 10*time.Second)
}

// emulator attaches an Epson emulator to the gadget side, closed at the end.
func emulator(t *testing.T) (*printertest.Printer, func()) {
	t.Helper()
	p := printertest.New(printertest.Options{Name: "kitchen", Model: printertest.ModelEpson})
	detach, err := p.AttachGadget(gadgetDev)
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, detach
}

// waitPath waits up to limit for path to exist (want) or be gone (!want).
func waitPath(t *testing.T, path string, want bool, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		_, err := os.Stat(path)
		if (err == nil) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s exists=%v after %v, want %v", path, err == nil, limit, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pg runs printgate with args and returns its output and exit code; it
// fails t when the run takes longer than limit or cannot start.
func pg(t *testing.T, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("printgate %s did not finish within %v:\n%s", strings.Join(args, " "), limit, out.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("printgate %s: %v", strings.Join(args, " "), err)
	return "", -1
}

func mustPG(t *testing.T, limit time.Duration, args ...string) string {
	t.Helper()
	out, code := pg(t, limit, args...)
	if code != 0 {
		t.Fatalf("printgate %s: exit %d, want 0:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func freePort(t *testing.T) int { return proctest.FreePort(t) }

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer = proctest.Buffer

// agentRun is one `printgate run`.
type agentRun struct {
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan error
	base string
	tok  string
}

// agentConfig is an agent's config with the USB printer (by VID:PID, so the
// agent finds lp0 through sysfs), its port and its token.
type agentConfig struct {
	path, tok string
	port      int
}

// writeConfig writes a config into a new directory of t's; extra is added
// to the printer's table.
func writeConfig(t *testing.T, extra string) agentConfig {
	t.Helper()
	dir := t.TempDir()
	tokPath := filepath.Join(dir, "api-token.txt")
	mustPG(t, 30*time.Second, "token", "--out", tokPath)
	tok, err := os.ReadFile(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	config := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = '%s'\nlisten = \"127.0.0.1:%d\"\napi_token_file = '%s'\n\n[[printers]]\nname = \"kitchen\"\nurl = \"usb://04b8:0e15\"\n%s",
		filepath.Join(dir, "data"), port, tokPath, extra)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return agentConfig{path: config, tok: strings.TrimSpace(string(tok)), port: port}
}

// startAgent runs the agent on c until owner ends; it waits until /healthz
// answers.
func startAgent(t, owner *testing.T, c agentConfig) *agentRun {
	t.Helper()
	logs := &lockedBuffer{}
	cmd := exec.Command(exe, "run", "--config", c.path)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agentRun{cmd: cmd, logs: logs, done: make(chan error, 1), base: fmt.Sprintf("http://127.0.0.1:%d", c.port), tok: c.tok}
	go func() { a.done <- cmd.Wait() }()
	owner.Cleanup(func() {
		select {
		case <-a.done:
		default:
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-a.done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-a.done
			}
		}
		if owner.Failed() {
			owner.Logf("agent log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _, _ := a.get("/healthz"); code == 200 {
			return a
		}
		select {
		case err := <-a.done:
			a.done <- err
			t.Fatalf("agent exited before it answered /healthz (%v):\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not answer /healthz within 30 s:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (a *agentRun) get(path string) (int, string, error) {
	req, err := http.NewRequest("GET", a.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	if a.tok != "" {
		req.Header.Set("Authorization", "Bearer "+a.tok)
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// submit posts a ticket with the text lines for the printer and wants 202.
func (a *agentRun) submit(t *testing.T, taskNo string, lines ...string) {
	t.Helper()
	var ls []string
	for _, l := range lines {
		ls = append(ls, fmt.Sprintf(`{"text":%q}`, l))
	}
	body := fmt.Sprintf(`{"task_no":%q,"printer":"kitchen","document":{"lines":[%s,{"cut":"partial"}]}}`, taskNo, strings.Join(ls, ","))
	req, _ := http.NewRequest("POST", a.base+"/api/v1/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.tok)
	req.Header.Set("Content-Type", "application/json")
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("submit %s: %v", taskNo, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 202 {
		t.Fatalf("submit %s: HTTP %d, want 202: %s", taskNo, resp.StatusCode, b)
	}
}

// task is the part of GET /api/v1/tasks/{task_no} the checks read.
type task struct {
	State             string `json:"state"`
	Reason            string `json:"reason"`
	Attempts          int    `json:"attempts"`
	Confirmation      string `json:"confirmation"`
	PossibleDuplicate bool   `json:"possible_duplicate"`
	Timeline          []struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	} `json:"timeline"`
}

// passed reports whether the task's timeline holds state.
func (v task) passed(state string) bool {
	for _, e := range v.Timeline {
		if e.State == state {
			return true
		}
	}
	return false
}

func (a *agentRun) task(t *testing.T, taskNo string) task {
	t.Helper()
	code, body, err := a.get("/api/v1/tasks/" + taskNo)
	if err != nil || code != 200 {
		t.Fatalf("get task %s: HTTP %d %v: %s", taskNo, code, err, body)
	}
	var v task
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("get task %s: %v: %s", taskNo, err, body)
	}
	return v
}

// waitState waits up to limit for the task to reach want and returns it.
func (a *agentRun) waitState(t *testing.T, taskNo, want string, limit time.Duration) task {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		v := a.task(t, taskNo)
		if v.State == want {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%s) after %v, want %s", taskNo, v.State, v.Reason, limit, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// printedOn waits up to limit for a ticket holding text on p.
func printedOn(t *testing.T, p *printertest.Printer, text string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		for _, tk := range p.Tickets() {
			if tk.Contains(text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ticket with %q on the emulator after %v (%d tickets)", text, limit, len(p.Tickets()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReason waits up to limit for the task to carry reason and returns it.
func (a *agentRun) waitReason(t *testing.T, taskNo, reason string, limit time.Duration) task {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		v := a.task(t, taskNo)
		if v.Reason == reason {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%q) after %v, want reason %s", taskNo, v.State, v.Reason, limit, reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPassed waits up to limit for the task's timeline to hold state (a
// state it may leave at once, as UNKNOWN for a reprint).
func (a *agentRun) waitPassed(t *testing.T, taskNo, state string, limit time.Duration) task {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		v := a.task(t, taskNo)
		if v.passed(state) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%q) after %v and was never %s", taskNo, v.State, v.Reason, limit, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logLines logs the agent's log lines that hold any of subs, so the run's
// output shows what the agent saw (which errno, which state).
func (a *agentRun) logLines(t *testing.T, subs ...string) {
	t.Helper()
	for _, l := range strings.Split(a.logs.String(), "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				t.Log(l)
				break
			}
		}
	}
}

// waitPrinter waits up to limit for the page's list (GET /api/v1/printers)
// to show the kitchen printer in state.
func waitPrinter(t *testing.T, a *agentRun, state string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var v struct {
			Printers []struct {
				Name, State string
			} `json:"printers"`
		}
		code, body, err := a.get("/api/v1/printers")
		if err == nil && code == 200 && json.Unmarshal([]byte(body), &v) == nil {
			for _, p := range v.Printers {
				if p.Name == "kitchen" && p.State == state {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("printer kitchen not %s after %v: %s", state, limit, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
