package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"printgate/internal/proctest"
)

// hubEnv is the environment of a printgate-hub run with home as the
// user's home and no XDG_STATE_HOME, so the built-in config's data dir is
// home/.local/state/printgate-hub.
func hubEnv(home string) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "XDG_STATE_HOME=") {
			env = append(env, e)
		}
	}
	return append(env, "HOME="+home)
}

// runHub runs a printgate-hub command to its end in env (killed after a
// minute) and returns its stdout, stderr and exit code.
func runHub(t *testing.T, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("printgate-hub %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// mustHub is runHub for a command that must succeed; it returns stdout.
func mustHub(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	out, errOut, code := runHub(t, bin, env, args...)
	if code != 0 {
		t.Fatalf("printgate-hub %v: exit %d\n%s", args, code, errOut)
	}
	return strings.TrimSpace(out)
}

// startIn is start with an environment: the hub with env, up on base.
func startIn(t *testing.T, base, bin string, env []string, args ...string) (*proc, *proctest.Buffer) {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), logs: &proctest.Buffer{}}
	stdout := &proctest.Buffer{}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = stdout, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, stdout
			}
		}
		if time.Now().After(deadline) {
			p.cmd.Process.Kill()
			p.cmd.Wait()
			t.Fatalf("printgate-hub did not come up: %v\n%s", err, p.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // another process: nothing to wait on but its port
	}
}

// stopHub sends SIGTERM and checks the hub exits 0.
func stopHub(t *testing.T, p *proc) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("printgate-hub after SIGTERM: %v\n%s", err, p.logs.String())
	}
}

// TestRunWithoutConfig runs the real binary the way the README's first
// try does, without a config file, and ensures: it listens (here on
// --listen, as the default 127.0.0.1:8640 may be taken on a test machine),
// keeps its data in the user's state dir, and prints the next steps; the
// add commands without --config then reach the same data dir, and the hub
// started again serves the tenant's store to the key they printed.
func TestRunWithoutConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	defer http.DefaultClient.CloseIdleConnections()
	dir := t.TempDir()
	bin := buildBin(t, dir, "printgate-hub", ".")
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := hubEnv(home)
	addr := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	base := "http://" + addr

	p, stdout := startIn(t, base, bin, env, "run", "--listen", addr)
	stopHub(t, p)
	dataDir := filepath.Join(home, ".local", "state", "printgate-hub")
	for _, want := range []string{
		"built-in config: " + base + ", data in " + dataDir,
		"printgate-hub tenant add --id acme",
		"printgate-hub store add --tenant acme --id s001",
		"printgate-hub key add --tenant acme",
		"printgate-hub user add --tenant acme --name ana",
		base + "/fleet/pair",
		"printgate-hub run --listen " + addr,
		"ws://" + addr + "/agent/v1",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run's next steps lack %q:\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "jetstream")); err != nil {
		t.Errorf("no data in the state dir: %v", err)
	}

	mustHub(t, bin, env, "tenant", "add", "--id", "acme", "--name", "Acme Foods")
	mustHub(t, bin, env, "store", "add", "--tenant", "acme", "--id", "s001")
	key := mustHub(t, bin, env, "key", "add", "--tenant", "acme")
	password := mustHub(t, bin, env, "user", "add", "--tenant", "acme", "--name", "ana")
	p, _ = startIn(t, base, bin, env, "run", "--listen", addr)
	defer func() {
		if p != nil {
			p.kill(t)
		}
	}()
	var list struct {
		Stores []struct {
			Store string `json:"store"`
		} `json:"stores"`
	}
	if code := api(t, "GET", base+"/v1/stores", key, "", &list); code != http.StatusOK || len(list.Stores) != 1 || list.Stores[0].Store != "s001" {
		t.Fatalf("GET /v1/stores with the key add printed: %d %+v; want 200 with s001", code, list)
	}
	if where := signIn(t, base, "acme", "ana", password); where != "/fleet/" {
		t.Fatalf("signing in to the fleet page with the password user add printed went to %q, want /fleet/", where)
	}
	stopHub(t, p)
	p = nil
}

// signIn signs in to the fleet page under base as a browser does (the
// form's CSRF token and cookie) and returns where the page sent it.
func signIn(t *testing.T, base, tenant, name, password string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(base + "/fleet/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no sign-in form at %s/fleet/login:\n%s", base, body)
	}
	resp, err = hc.PostForm(base+"/fleet/login", url.Values{"csrf": {string(m[1])}, "tenant": {tenant}, "name": {name}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hc.CloseIdleConnections()
	return resp.Header.Get("Location")
}

// TestKeyListAndRevoke runs the real binary and ensures: key list shows
// each key of the tenant by id, active; key revoke turns one revoked (and
// the list says so); the restarted hub answers the revoked key 401 while
// the tenant's other key still works; a key id that is not the tenant's is
// refused with a fix that names key list.
func TestKeyListAndRevoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	defer http.DefaultClient.CloseIdleConnections()
	dir := t.TempDir()
	bin := buildBin(t, dir, "printgate-hub", ".")
	env := hubEnv(dir)
	addr := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	base := "http://" + addr
	data := []string{"--data-dir", filepath.Join(dir, "data")}
	cmd := func(args ...string) []string { return append(args, data...) }

	mustHub(t, bin, env, cmd("tenant", "add", "--id", "acme")...)
	mustHub(t, bin, env, cmd("tenant", "add", "--id", "other")...)
	mustHub(t, bin, env, cmd("store", "add", "--tenant", "acme", "--id", "s001")...)
	oldKey := mustHub(t, bin, env, cmd("key", "add", "--tenant", "acme")...)
	newKey := mustHub(t, bin, env, cmd("key", "add", "--tenant", "acme")...)
	otherKey := mustHub(t, bin, env, cmd("key", "add", "--tenant", "other")...)

	listed := strings.Split(mustHub(t, bin, env, cmd("key", "list", "--tenant", "acme")...), "\n")
	if len(listed) != 2 || !strings.HasSuffix(listed[0], " active") || !strings.HasSuffix(listed[1], " active") {
		t.Fatalf("key list: %q; want the two keys of acme, active", listed)
	}
	// Keys are listed oldest first: the first is oldKey's.
	oldID := strings.Fields(listed[0])[0]
	otherID := strings.Fields(mustHub(t, bin, env, cmd("key", "list", "--tenant", "other")...))[0]

	_, errOut, code := runHub(t, bin, env, cmd("key", "revoke", "--tenant", "acme", "--id", otherID)...)
	if code != 1 || !strings.Contains(errOut, "not found") || !strings.Contains(errOut, "fix: printgate-hub key list --data-dir ") {
		t.Errorf("key revoke of another tenant's key: exit %d\n%s; want 1, not found, a fix naming key list", code, errOut)
	}
	if out := mustHub(t, bin, env, cmd("key", "revoke", "--tenant", "acme", "--id", oldID)...); !strings.Contains(out, oldID+" of tenant acme revoked") {
		t.Errorf("key revoke said %q", out)
	}
	listed = strings.Split(mustHub(t, bin, env, cmd("key", "list", "--tenant", "acme")...), "\n")
	if len(listed) != 2 || !strings.HasPrefix(listed[0], oldID) || !strings.HasSuffix(listed[0], " revoked") || !strings.HasSuffix(listed[1], " active") {
		t.Fatalf("key list after the revoke: %q; want %s revoked, the other active", listed, oldID)
	}

	p, _ := startIn(t, base, bin, env, append([]string{"run", "--listen", addr}, data...)...)
	defer p.kill(t)
	codes := map[string]int{}
	for name, k := range map[string]string{"old": oldKey, "new": newKey, "other": otherKey} {
		codes[name] = api(t, "GET", base+"/v1/stores", k, "", nil)
	}
	if codes["old"] != http.StatusUnauthorized || codes["new"] != http.StatusOK || codes["other"] != http.StatusOK {
		t.Errorf("GET /v1/stores after the revoke: %v; want old 401, new and other 200", codes)
	}
}

// TestCLIFailuresSayFix runs the real binary into each kind of failure
// and ensures each ends with a fix: line and the documented exit code (1
// failed, 2 a usage mistake).
func TestCLIFailuresSayFix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	dir := t.TempDir()
	bin := buildBin(t, dir, "printgate-hub", ".")
	env := hubEnv(dir)
	data := filepath.Join(dir, "data")
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("data_dir = \"d\"\nlisen = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mustHub(t, bin, env, "tenant", "add", "--id", "acme", "--data-dir", data)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage:"},
		{[]string{"tenant", "remove"}, 2, `unknown command "tenant remove"`},
		{[]string{"run", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"run", "--config", filepath.Join(dir, "none.toml")}, 1, "no config at"},
		{[]string{"run", "--config", bad}, 1, "bad.toml:2: unknown key lisen (did you mean listen?)"},
		{[]string{"run", "--config", bad, "--listen", "127.0.0.1:1"}, 2, "change only the built-in config"},
		{[]string{"run", "--listen", "nope", "--data-dir", data}, 2, `listen "nope" is not host:port`},
		{[]string{"run", "--listen", taken.Addr().String(), "--data-dir", data}, 1, "listen on " + taken.Addr().String()},
		{[]string{"tenant", "add", "--data-dir", data}, 2, "--id is required"},
		{[]string{"tenant", "add", "--id", "acme", "--data-dir", data}, 1, "exists"},
		{[]string{"key", "list", "--tenant", "nobody", "--data-dir", data}, 1, "tenant nobody"},
		{[]string{"key", "revoke", "--tenant", "acme", "--data-dir", data}, 2, "--id is required"},
		{[]string{"store", "add", "--tenant", "acme", "--id", "s1", "--data-dir", notDir}, 1, "printgate-hub:"},
	} {
		_, errOut, code := runHub(t, bin, env, c.args...)
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		if code != c.code || !strings.Contains(errOut, c.want) || !strings.HasPrefix(lines[len(lines)-1], "fix: ") {
			t.Errorf("printgate-hub %v: exit %d\n%s\nwant exit %d, %q, and a last line fix: …", c.args, code, errOut, c.code, c.want)
		}
	}
}

// TestRootRefusesAnotherUsersDataDir ensures that root, running an add
// command or run on a data dir that belongs to another user (the packaged
// hub's is printgate-hub's), is refused before anything is written, with a
// fix that runs the same command as that user.
func TestRootRefusesAnotherUsersDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the data dir to another user")
	}
	dir := t.TempDir()
	bin := buildBin(t, dir, "printgate-hub", ".")
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"tenant", "add", "--id", "acme", "--data-dir", data},
		// A port that cannot be listened on, so run ends either way.
		{"run", "--listen", "127.0.0.1:no-port", "--data-dir", data},
	} {
		_, errOut, code := runHub(t, bin, hubEnv(dir), args...)
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		fix := lines[len(lines)-1]
		if code != 1 || !strings.Contains(errOut, "belongs to") || !strings.HasPrefix(fix, "fix: run it as ") ||
			!strings.HasSuffix(fix, "-- printgate-hub "+strings.Join(args, " ")) {
			t.Errorf("printgate-hub %v as root on another user's data dir: exit %d\n%s; want 1 with a fix that runs it as that user", args, code, errOut)
		}
	}
	if entries, err := os.ReadDir(data); err != nil || len(entries) != 0 {
		t.Errorf("the refused commands wrote into the data dir: %v %v", entries, err)
	}
}

// TestDemo runs `make demo`'s script (the real printgate-hub, printgate,
// printersim and webhooksink binaries it builds) for a second and ensures
// what it shows: the agent paired through the device flow, the emulated
// printer draws the job submitted to the hub's API once, the hub reports
// it PRINTED with the agent's timeline, the same task_no again is a
// duplicate, a ticket through the agent's LAN API reaches the hub, the
// receiver got their PRINTED webhooks with their signatures verified,
// kitchen's ticket fails over to bar, and a ticket printed while the hub
// was SIGKILLed reaches the restarted hub and its webhook arrives.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs four binaries")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the demo calls the API with curl")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../../scripts/demo.sh")
	// The printers take DEMO_PRINTER_PORT and the next port.
	printers := proctest.FreePort(t)
	for tries := 0; ; tries++ {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", printers+1)); err == nil {
			ln.Close()
			break
		} else if tries == 20 {
			t.Fatalf("no two free ports in a row: %v", err)
		}
		printers = proctest.FreePort(t)
	}
	cmd.Env = append(os.Environ(), "DEMO_DURATION=1", "DEMO_DIR="+filepath.Join(dir, "demo"),
		fmt.Sprintf("DEMO_HUB_PORT=%d", proctest.FreePort(t)), fmt.Sprintf("DEMO_AGENT_PORT=%d", proctest.FreePort(t)),
		fmt.Sprintf("DEMO_PRINTER_PORT=%d", printers), fmt.Sprintf("DEMO_HOOK_PORT=%d", proctest.FreePort(t)),
		fmt.Sprintf("DEMO_CONTROL_PORT=%d", proctest.FreePort(t)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{
		"   Paired. The device token is in ",
		"│ submitted to printgate-hub │",
		`"state":"PRINTED","printer":"kitchen","confirmation":`,
		`"state":"PRINTED","duplicate":true} (200)`,
		"│ sent to the agent's LAN API │",
		`_LAN_v1","store":"s001","state":"PRINTED"`,
		"│ FAILOVER kitchen → bar      │",
		`_KITCHEN_v1","store":"s001","state":"PRINTED","printer":"kitchen","target":"bar"`,
		"│ printed while the hub was down │",
		`_BAR_v1","store":"s001","state":"PRINTED","printer":"bar"`,
		"/fleet/ (tenant demo, user manager): s001 online",
		"DEMO_DURATION (1) is over",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "│ submitted to printgate-hub │"); n != 1 {
		t.Errorf("the ticket was drawn %d times, want once:\n%s", n, s)
	}
	for _, task := range []string{"1_KITCHEN_v1 PRINTED, origin cloud", "2_LAN_v1 PRINTED, origin local", "3_KITCHEN_v1 PRINTED, origin cloud", "4_BAR_v1 PRINTED, origin local"} {
		if !regexp.MustCompile(`webhook ← job.state_changed s001/DEMO-\d+-` + task + ` \(signature verified`).MatchString(s) {
			t.Errorf("no verified webhook %q in the demo's output:\n%s", task, s)
		}
	}
	if strings.Contains(s, "webhook refused") {
		t.Errorf("the receiver refused a webhook:\n%s", s)
	}
	// A webhook-id twice is a message sent twice: at least once allows it
	// across a hub's crash (a delivery in flight at the kill), not before.
	before, _, _ := strings.Cut(s, "== 10.")
	ids := map[string]int{}
	for _, m := range regexp.MustCompile(`webhook-id (msg_[0-9a-f]+)`).FindAllStringSubmatch(before, -1) {
		if ids[m[1]]++; ids[m[1]] == 2 {
			t.Errorf("webhook %s arrived twice:\n%s", m[1], s)
		}
	}
}
