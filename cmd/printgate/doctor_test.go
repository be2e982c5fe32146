package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"printgate/agent/config"
	"printgate/agent/rawport"
	"printgate/drivers"
	"printgate/drivers/printertest"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
)

// testDoctorEnv is the real environment with short timeouts and a fixed
// clock.
func testDoctorEnv() doctorEnv {
	env := defaultDoctorEnv
	env.probeTimeout = time.Second
	env.netTimeout = 3 * time.Second
	env.usb = func() ([]drivers.Found, error) { return nil, nil }
	return env
}

// doctorConfig writes a config with dataDir, listen and printer URLs (one
// printer "p0", "p1"… each) plus extra TOML at the top, and loads it.
func doctorConfig(t *testing.T, dataDir, listen, extra string, urls ...string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = %q\napi_token = %q\n%s\n", dataDir, listen, promiseToken, extra)
	if len(urls) == 0 {
		urls = []string{"tcp://127.0.0.1:9100"} // a config needs one
	}
	for i, u := range urls {
		body += fmt.Sprintf("[[printers]]\nname = \"p%d\"\nurl = %q\n", i, u)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func wantResult(t *testing.T, what string, r checkResult, status checkStatus, detail, fix string) {
	t.Helper()
	if r.Status != status || !strings.Contains(r.Detail, detail) || !strings.Contains(r.Fix, fix) || (status == checkPass && r.Fix != "") {
		t.Errorf("%s: %s %s: %q, fix %q; want %s, detail with %q, fix with %q", what, r.Status.mark(), r.Name, r.Detail, r.Fix, status.mark(), detail, fix)
	}
}

func TestDoctorConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := doctorConfig(t, dir, "127.0.0.1:8631", "", "tcp://127.0.0.1:9100")
	got, r := checkConfig(cfg.Path)
	wantResult(t, "valid", r, checkPass, "is valid: 1 printer(s), listen 127.0.0.1:8631, no cloud", "")
	if got == nil {
		t.Error("valid config not returned")
	}
	got, r = checkConfig(filepath.Join(dir, "none.toml"))
	wantResult(t, "missing", r, checkFail, "no config at", "printgate install")
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("listen = \"nope\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9100\"\n"), 0o600)
	got, r = checkConfig(bad)
	wantResult(t, "bad", r, checkFail, "bad.toml:1: listen", "edit the lines named above")
	if got != nil || !strings.Contains(r.Detail, "no api_token") {
		t.Errorf("bad config: every problem should be shown: %q", r.Detail)
	}
}

func TestDoctorDataDir(t *testing.T) {
	dir := t.TempDir()
	wantResult(t, "writable", checkDataDir(doctorConfig(t, dir, ":8631", "")), checkPass, "is writable", "")
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the probe left %v behind", left)
	}
	missing := filepath.Join(dir, "a", "b")
	wantResult(t, "creatable", checkDataDir(doctorConfig(t, missing, ":8631", "")), checkPass, "does not exist yet; the agent will create it", "")
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error("doctor created the data dir's parent")
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	wantResult(t, "a file", checkDataDir(doctorConfig(t, file, ":8631", "")), checkFail, "is a file, not a folder", "set data_dir")
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Log("not checking a read-only folder: root (or Windows) writes anyway")
		return
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	wantResult(t, "read-only", checkDataDir(doctorConfig(t, ro, ":8631", "")), checkFail, "is not writable: permission denied", "chown -R printgate: "+ro)
	wantResult(t, "not creatable", checkDataDir(doctorConfig(t, filepath.Join(ro, "d"), ":8631", "")), checkFail, "cannot be created in "+ro, "sudo mkdir -p")
}

func TestDoctorDisk(t *testing.T) {
	cfg := doctorConfig(t, t.TempDir(), ":8631", "")
	env := testDoctorEnv()
	wantResult(t, "real", checkDisk(env, cfg), checkPass, "free on the disk of", "") // the test machine has a GiB to spare
	for _, tc := range []struct {
		free   uint64
		status checkStatus
		detail string
	}{
		{5 << 30, checkPass, "5.0 GiB free"},
		{500 << 20, checkWarn, "500 MiB free on the disk of " + cfg.DataDir + ": under 1.0 GiB"},
		{50 << 20, checkFail, "50 MiB free on the disk of " + cfg.DataDir + ": under 100 MiB, the spool will soon refuse tickets"},
	} {
		env.diskFree = func(string) (uint64, error) { return tc.free, nil }
		fix := ""
		if tc.status != checkPass {
			fix = "free space on the disk holding"
		}
		wantResult(t, tc.detail, checkDisk(env, cfg), tc.status, tc.detail, fix)
	}
}

func TestDoctorPort(t *testing.T) {
	env := testDoctorEnv()
	free := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	r, running := checkPort(context.Background(), env, doctorConfig(t, t.TempDir(), free, ""))
	wantResult(t, "free", r, checkPass, "free (the agent is not running)", "")
	if running {
		t.Error("free port taken for a running agent")
	}

	// Another program: a web server that is not printgate.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	r, running = checkPort(context.Background(), env, doctorConfig(t, t.TempDir(), other.Listener.Addr().String(), ""))
	wantResult(t, "other program", r, checkFail, "in use by another program", "set listen in ")
	// And a listener that never answers HTTP.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	r, _ = checkPort(context.Background(), env, doctorConfig(t, t.TempDir(), ln.Addr().String(), ""))
	wantResult(t, "raw listener", r, checkFail, "in use by another program", "or stop the program using port")
	if running {
		t.Error("another program taken for printgate")
	}
}

// TestDoctorAgentRunning runs doctor against a real running agent: the
// port is "in use by printgate (running)" and the printers are read from
// the agent (not probed behind its back); the whole run exits 0.
func TestDoctorAgentRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	path, _, base, _ := promiseSetup(t)
	realAgent(t, path, base)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	env := testDoctorEnv()
	r, running := checkPort(context.Background(), env, cfg)
	wantResult(t, "running", r, checkPass, "in use by printgate (running)", "")
	if !running {
		t.Fatal("the running agent was not recognised")
	}
	// The agent reads its printer's state soon after it starts.
	var rs []checkResult
	for deadline := time.Now().Add(10 * time.Second); ; {
		rs = checkPrinters(context.Background(), env, cfg, true)
		if len(rs) != 1 {
			t.Fatalf("printer results %+v", rs)
		}
		if !strings.Contains(rs[0].Detail, "UNKNOWN") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // another process
	}
	wantResult(t, "printer via agent", rs[0], checkPass, "READY as the running agent sees it", "")

	code, out, errs := runCmd("doctor", "--config", path)
	if code != 0 || !strings.Contains(out, "✓ listen 127.0.0.1:") || !strings.Contains(out, "All checks passed.") {
		t.Errorf("doctor: exit %d\n%s%s", code, out, errs)
	}
}

func TestDoctorPrinters(t *testing.T) {
	_, readyURL := startEmulator(t, printertest.ModelEpson, "")
	_, paperURL := startEmulator(t, printertest.ModelEpson, printertest.FaultPaperOut)
	offURL := closedURL(t)
	cfg := doctorConfig(t, t.TempDir(), ":8631", "", readyURL, paperURL, offURL)
	rs := checkPrinters(context.Background(), testDoctorEnv(), cfg, false)
	if len(rs) != 3 {
		t.Fatalf("results %+v", rs)
	}
	wantResult(t, "ready", rs[0], checkPass, readyURL+": ready (process-id barrier", "")
	wantResult(t, "paper out", rs[1], checkWarn, "paper out", "load paper")
	wantResult(t, "offline", rs[2], checkFail, "offline (dial", fmt.Sprintf("check the printer is on and on the network, and that %s at %s line 11 is its address", strings.TrimPrefix(offURL, "tcp://"), cfg.Path))
	// A printer whose profile promises answers, silent: not answering.
	_, onewayURL := startEmulator(t, printertest.ModelOneWay, "")
	cfg = doctorConfig(t, t.TempDir(), ":8631", "", onewayURL)
	rs = checkPrinters(context.Background(), testDoctorEnv(), cfg, false)
	wantResult(t, "silent", rs[0], checkFail, "not answering", `set ack = "none" there`)
}

func TestDoctorDevices(t *testing.T) {
	env := testDoctorEnv()
	wantResult(t, "none", checkDevices(env, doctorConfig(t, t.TempDir(), ":8631", "", "tcp://127.0.0.1:9100"))[0], checkSkip, "no serial or USB printers configured", "")
	if runtime.GOOS == "windows" {
		r := checkDevices(env, doctorConfig(t, t.TempDir(), ":8631", "", "serial://COM3"))[0]
		wantResult(t, "windows", r, checkSkip, "not checked on Windows", "")
		return
	}
	dev := filepath.Join(t.TempDir(), "ttyUSB0")
	if err := os.WriteFile(dev, nil, 0o660); err != nil {
		t.Fatal(err)
	}
	cfg := doctorConfig(t, t.TempDir(), ":8631", "", "serial://"+dev, "usb://"+dev+"-missing")
	rs := checkDevices(env, cfg)
	wantResult(t, "accessible", rs[0], checkPass, dev+": ", "")
	wantResult(t, "missing", rs[1], checkFail, "no such file or directory", "plug the printer in")
	if rs[0].Name != "device of p0" {
		t.Errorf("name %q", rs[0].Name)
	}

	// A usb://VID:PID printer is checked at the device discovery finds.
	env.usb = func() ([]drivers.Found, error) {
		return []drivers.Found{{Kind: drivers.SchemeUSB, Name: dev, VendorID: 0x04b8, ProductID: 0x0202}}, nil
	}
	rs = checkDevices(env, doctorConfig(t, t.TempDir(), ":8631", "", "usb://04b8:0202", "usb://1234:5678"))
	wantResult(t, "by id", rs[0], checkPass, dev+": ", "")
	wantResult(t, "by id, absent", rs[1], checkSkip, "no USB printer 1234:5678 is attached", "")

	if os.Geteuid() == 0 {
		t.Log("not checking a denied device: root bypasses permissions")
		return
	}
	if err := os.Chmod(dev, 0o000); err != nil {
		t.Fatal(err)
	}
	r := checkDevices(env, doctorConfig(t, t.TempDir(), ":8631", "", "serial://"+dev))[0]
	wantResult(t, "denied", r, checkFail, "cannot read and write it (mode ----------, group ", "sudo chmod g+rw "+dev)
	os.Chmod(dev, 0o600) // owner-only: the group would need rw as well
	r = devicePermission(dev, drivers.SchemeSerial)
	wantResult(t, "owner only, accessible", r, checkPass, "can read and write it", "")
}

// cloudConfig is a config whose [cloud] points at srv.
func cloudConfig(t *testing.T, srvURL string) *config.Config {
	t.Helper()
	ws := "ws" + strings.TrimPrefix(srvURL, "http") + cloudtest.AgentPath
	return doctorConfig(t, t.TempDir(), ":8631", fmt.Sprintf("[cloud]\nurl = %q\nauth_url = %q\n", ws, srvURL+"/oauth"), "tcp://127.0.0.1:9100")
}

func TestDoctorCloud(t *testing.T) {
	env := testDoctorEnv()
	ctx := context.Background()
	wantResult(t, "no cloud", checkCloud(ctx, env, doctorConfig(t, t.TempDir(), ":8631", "")), checkSkip, "store-only", "")

	cloud := cloudtest.New(cloudtest.Options{})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	paired := func(token, agentID string) *config.Config {
		cfg := cloudConfig(t, srv.URL)
		if token != "" {
			if err := pair.Save(cfg.DataDir, token); err != nil {
				t.Fatal(err)
			}
		}
		if agentID != "" {
			os.WriteFile(filepath.Join(cfg.DataDir, "agent-id"), []byte(agentID+"\n"), 0o600)
		}
		return cfg
	}
	good := cloud.IssueToken("pg-good")
	wantResult(t, "valid token", checkCloud(ctx, env, paired(good, "pg-good")), checkPass, "connected; the device token is accepted", "")
	if cloud.ConnectCount("pg-good") != 0 {
		t.Error("doctor said hello: the cloud counts it as the agent connecting")
	}
	wantResult(t, "not paired", checkCloud(ctx, env, paired("", "pg-good")), checkFail, "not paired: there is no device token at", "printgate pair --config ")
	wantResult(t, "unknown token", checkCloud(ctx, env, paired("nope", "pg-good")), checkFail, "refused the device token (HTTP 401)", "printgate pair again (the token was revoked)")
	revoked := cloud.IssueToken("pg-rev")
	cloud.Revoke(revoked)
	wantResult(t, "revoked token", checkCloud(ctx, env, paired(revoked, "pg-rev")), checkFail, "refused the device token (HTTP 401)", "printgate pair again (the token was revoked)")
	fresh := cloud.IssueToken("")
	wantResult(t, "agent never ran", checkCloud(ctx, env, paired(fresh, "")), checkWarn, "the device token was not checked: the agent has not run yet", "start the agent")

	down := cloudConfig(t, "http://"+strings.TrimPrefix(closedURL(t), "tcp://"))
	pair.Save(down.DataDir, good)
	os.WriteFile(filepath.Join(down.DataDir, "agent-id"), []byte("pg-good"), 0o600)
	wantResult(t, "cloud down", checkCloud(ctx, env, down), checkFail, "cannot reach ws://127.0.0.1:", "check this PC's internet connection")
}

func TestDoctorClock(t *testing.T) {
	ctx := context.Background()
	env := testDoctorEnv()
	wantResult(t, "no cloud", checkClock(ctx, env, doctorConfig(t, t.TempDir(), ":8631", "")), checkSkip, "no cloud", "")

	// The reference cloud, against this PC's real clock.
	cloud := cloudtest.New(cloudtest.Options{})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	wantResult(t, "reference cloud", checkClock(ctx, env, cloudConfig(t, srv.URL)), checkPass, "the cloud's clock", "")

	// A cloud whose Date is fixed, against an injected local clock.
	cloudTime := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	skewed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", cloudTime.Format(http.TimeFormat))
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer skewed.Close()
	cfg := cloudConfig(t, skewed.URL)
	for _, tc := range []struct {
		local  time.Duration
		status checkStatus
		detail string
	}{
		{2 * time.Second, checkPass, "this PC is 2s ahead of the cloud's clock"},
		{-time.Minute, checkWarn, "this PC is 1m0s behind the cloud's clock"},
		{10 * time.Minute, checkFail, "this PC is 10m0s ahead of the cloud's clock"},
	} {
		env.now = func() time.Time { return cloudTime.Add(tc.local) }
		fix := ""
		if tc.status != checkPass {
			fix = timeSyncFix
		}
		wantResult(t, tc.detail, checkClock(ctx, env, cfg), tc.status, tc.detail, fix)
	}
	noDate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // suppress the server's own
	}))
	defer noDate.Close()
	wantResult(t, "no Date", checkClock(ctx, env, cloudConfig(t, noDate.URL)), checkWarn, "no readable Date header", "by hand")
}

// TestDoctorCommand runs the whole command: a healthy store-only setup
// exits 0 with every line passed or skipped; an unreachable printer makes
// it exit 1 with its fix; a missing config exits 1; usage errors exit 2.
func TestDoctorCommand(t *testing.T) {
	_, readyURL := startEmulator(t, printertest.ModelEpson, "")
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ok := doctorConfig(t, t.TempDir(), listen, "", readyURL)
	code, out, errs := runCmd("doctor", "--config", ok.Path)
	if code != 0 || strings.Contains(out, "✗") || !strings.Contains(out, "✓ printer p0: "+readyURL+": ready") || !strings.HasSuffix(out, "All checks passed.\n") {
		t.Errorf("healthy: exit %d\n%s%s", code, out, errs)
	}
	bad := doctorConfig(t, t.TempDir(), listen, "", closedURL(t))
	code, out, _ = runCmd("doctor", "--config", bad.Path)
	if code != 1 || !strings.Contains(out, "✗ printer p0: ") || !strings.Contains(out, "\n    fix: check the printer is on") || !strings.HasSuffix(out, "1 check(s) failed.\n") {
		t.Errorf("offline printer: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd("doctor", "--config", filepath.Join(t.TempDir(), "none.toml"))
	if code != 1 || !strings.HasPrefix(out, "✗ config: no config at") || !strings.Contains(out, "- the other checks need a valid config") {
		t.Errorf("missing config: exit %d\n%s", code, out)
	}
	if code, _, errs := runCmd("doctor", "extra"); code != 2 || !strings.Contains(errs, "usage: printgate doctor [--config FILE]") {
		t.Errorf("extra argument: exit %d %q", code, errs)
	}
}

// okSink takes every raw job; doctor's status query makes none.
type okSink struct{ jobs atomic.Int32 }

func (s *okSink) Accept(context.Context, rawport.Job) (string, error) {
	s.jobs.Add(1)
	return "RAW_x", nil
}
func (s *okSink) Ready(string) error                 { return nil }
func (s *okSink) Refused(string, string, int, error) {}

// TestDoctorRawPorts: without the agent a raw port must be free; with it,
// the port must answer DLE EOT 1 as a ready printer (0x16), which a port
// held by another program does not.
func TestDoctorRawPorts(t *testing.T) {
	env := testDoctorEnv()
	free := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	path := filepath.Join(t.TempDir(), "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:8631\"\napi_token = %q\n"+
		"[[printers]]\nname = \"p0\"\nurl = \"tcp://127.0.0.1:9100\"\nraw_listen = %q\n"+
		"[[printers]]\nname = \"p1\"\nurl = \"tcp://127.0.0.1:9101\"\nraw_listen = %q\n",
		t.TempDir(), promiseToken, free, busy.Addr().String())
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rs := checkRawPorts(env, cfg, false)
	if len(rs) != 2 {
		t.Fatalf("results %+v", rs)
	}
	wantResult(t, "free", rs[0], checkPass, "free (the agent takes it", "")
	wantResult(t, "taken", rs[1], checkFail, "cannot listen there", "give p1 a free raw_listen")

	// Running: p0's port is a real raw port, p1's another program that
	// answers something else.
	sink := &okSink{}
	port, err := rawport.Listen(free, "p0", sink, rawport.Options{MaxJobBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	go func() {
		for {
			c, err := busy.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	rs = checkRawPorts(env, cfg, true)
	wantResult(t, "agent's port", rs[0], checkPass, "answers a POS's status query as a ready printer", "")
	wantResult(t, "other program", rs[1], checkFail, "not a printer's 0x16", "stop the program using port")
	if n := sink.jobs.Load(); n != 0 {
		t.Errorf("doctor's status query made %d jobs", n)
	}
}
