package doctor

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
func testDoctorEnv() Env {
	env := DefaultEnv
	env.ProbeTimeout = time.Second
	env.NetTimeout = 3 * time.Second
	env.USB = func() ([]drivers.Found, error) { return nil, nil }
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

func wantResult(t *testing.T, what string, r Result, status Status, detail, fix string) {
	t.Helper()
	if r.Status != status || !strings.Contains(r.Detail, detail) || !strings.Contains(r.Fix, fix) || (status == Pass && r.Fix != "") {
		t.Errorf("%s: %s %s: %q, fix %q; want %s, detail with %q, fix with %q", what, r.Status.Mark(), r.Name, r.Detail, r.Fix, status.Mark(), detail, fix)
	}
}

// promiseToken is the API token of the test configs.
const promiseToken = "promise-test-token-0123456789"

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEmulator starts an emulated printer of model with fault set, and
// returns it and its tcp:// URL.
func startEmulator(t *testing.T, model printertest.Model, fault printertest.FaultKind) (*printertest.Printer, string) {
	t.Helper()
	p := printertest.New(printertest.Options{Model: model})
	t.Cleanup(func() { p.Close() })
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	if fault != "" {
		if err := p.SetFault(fault, true); err != nil {
			t.Fatal(err)
		}
	}
	return p, "tcp://" + p.Addr()
}

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "tcp://" + addr
}

func TestDoctorConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := doctorConfig(t, dir, "127.0.0.1:8631", "", "tcp://127.0.0.1:9100")
	got, r := CheckConfig(cfg.Path)
	wantResult(t, "valid", r, Pass, "is valid: 1 printer(s), listen 127.0.0.1:8631, no cloud", "")
	if got == nil {
		t.Error("valid config not returned")
	}
	got, r = CheckConfig(filepath.Join(dir, "none.toml"))
	wantResult(t, "missing", r, Fail, "no config at", "printgate install")
	if got != nil {
		t.Error("a missing config returned one")
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("listen = \"nope\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9100\"\n"), 0o600)
	got, r = CheckConfig(bad)
	wantResult(t, "bad", r, Fail, "bad.toml:1: listen", "edit the lines named above")
	if got != nil || !strings.Contains(r.Detail, "no api_token") {
		t.Errorf("bad config: every problem should be shown: %q", r.Detail)
	}
}

func TestDoctorDataDir(t *testing.T) {
	dir := t.TempDir()
	wantResult(t, "writable", CheckDataDir(doctorConfig(t, dir, ":8631", "")), Pass, "is writable", "")
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the probe left %v behind", left)
	}
	missing := filepath.Join(dir, "a", "b")
	wantResult(t, "creatable", CheckDataDir(doctorConfig(t, missing, ":8631", "")), Pass, "does not exist yet; the agent will create it", "")
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error("doctor created the data dir's parent")
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	wantResult(t, "a file", CheckDataDir(doctorConfig(t, file, ":8631", "")), Fail, "is a file, not a folder", "set data_dir")
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Log("not checking a read-only folder: root (or Windows) writes anyway")
		return
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	wantResult(t, "read-only", CheckDataDir(doctorConfig(t, ro, ":8631", "")), Fail, "is not writable: permission denied", "chown -R printgate: "+ro)
	wantResult(t, "not creatable", CheckDataDir(doctorConfig(t, filepath.Join(ro, "d"), ":8631", "")), Fail, "cannot be created in "+ro, "sudo mkdir -p")
}

func TestDoctorDisk(t *testing.T) {
	cfg := doctorConfig(t, t.TempDir(), ":8631", "")
	env := testDoctorEnv()
	wantResult(t, "real", CheckDisk(env, cfg), Pass, "free on the disk of", "") // the test machine has a GiB to spare
	// It says the spool cap the agent would work out.
	wantResult(t, "cap", CheckDisk(env, cfg), Pass, "; spool cap ", "")
	small := doctorConfig(t, t.TempDir(), ":8631", "[spool]\nmax_size = \"16MiB\"\n")
	wantResult(t, "explicit cap", CheckDisk(env, small), Pass, "spool cap 16 MiB (max_size)", "")
	for _, tc := range []struct {
		free   uint64
		status Status
		detail string
	}{
		{5 << 30, Pass, "5.0 GiB free"},
		{500 << 20, Warn, "500 MiB free on the disk of " + cfg.DataDir + ": under 1.0 GiB"},
		{50 << 20, Fail, "50 MiB free on the disk of " + cfg.DataDir + ": under 100 MiB, the spool will soon refuse tickets"},
	} {
		env.DiskFree = func(string) (uint64, error) { return tc.free, nil }
		fix := ""
		if tc.status != Pass {
			fix = "free space on the disk holding"
		}
		wantResult(t, tc.detail, CheckDisk(env, cfg), tc.status, tc.detail, fix)
	}
}

func TestDoctorPort(t *testing.T) {
	env := testDoctorEnv()
	free := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	r, running := CheckPort(context.Background(), env, doctorConfig(t, t.TempDir(), free, ""))
	wantResult(t, "free", r, Pass, "free (the agent is not running)", "")
	if running {
		t.Error("free port taken for a running agent")
	}

	// Another program: a web server that is not printgate.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	r, running = CheckPort(context.Background(), env, doctorConfig(t, t.TempDir(), other.Listener.Addr().String(), ""))
	wantResult(t, "other program", r, Fail, "in use by another program", "set listen in ")
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
	cfg := doctorConfig(t, t.TempDir(), ln.Addr().String(), "")
	r, _ = CheckPort(context.Background(), env, cfg)
	// The holder is named as printgate run names it, at the listen line
	// (so a person finds the same words in both); where /proc cannot say,
	// how to find it.
	if runtime.GOOS == "linux" {
		wantResult(t, "raw listener", r, Fail, cfg.Path+":2: in use by another program, ", fmt.Sprintf("(pid %d)", os.Getpid()))
	} else {
		wantResult(t, "raw listener", r, Fail, "in use by another program", "or stop the program using port")
	}
	if running {
		t.Error("another program taken for printgate")
	}
}

func TestDoctorPrinters(t *testing.T) {
	_, readyURL := startEmulator(t, printertest.ModelEpson, "")
	_, paperURL := startEmulator(t, printertest.ModelEpson, printertest.FaultPaperOut)
	offURL := closedURL(t)
	cfg := doctorConfig(t, t.TempDir(), ":8631", "", readyURL, paperURL, offURL)
	rs := CheckPrinters(context.Background(), testDoctorEnv(), cfg, false)
	if len(rs) != 3 {
		t.Fatalf("results %+v", rs)
	}
	wantResult(t, "ready", rs[0], Pass, readyURL+": ready (process-id barrier", "")
	wantResult(t, "paper out", rs[1], Warn, "paper out", "load paper")
	wantResult(t, "offline", rs[2], Fail, "offline (dial", fmt.Sprintf("check the printer is on and on the network, and that %s at %s:13 is its address", strings.TrimPrefix(offURL, "tcp://"), cfg.Path))
	// A printer whose profile promises answers, silent: not answering.
	_, onewayURL := startEmulator(t, printertest.ModelOneWay, "")
	cfg = doctorConfig(t, t.TempDir(), ":8631", "", onewayURL)
	rs = CheckPrinters(context.Background(), testDoctorEnv(), cfg, false)
	wantResult(t, "silent", rs[0], Fail, "not answering", `set ack = "none" there`)
}

func TestDoctorDevices(t *testing.T) {
	env := testDoctorEnv()
	wantResult(t, "none", CheckDevices(env, doctorConfig(t, t.TempDir(), ":8631", "", "tcp://127.0.0.1:9100"))[0], Skip, "no serial or USB printers configured", "")
	if runtime.GOOS == "windows" {
		r := CheckDevices(env, doctorConfig(t, t.TempDir(), ":8631", "", "serial://COM3"))[0]
		wantResult(t, "windows", r, Skip, "not checked on Windows", "")
		return
	}
	dev := filepath.Join(t.TempDir(), "ttyUSB0")
	if err := os.WriteFile(dev, nil, 0o660); err != nil {
		t.Fatal(err)
	}
	cfg := doctorConfig(t, t.TempDir(), ":8631", "", "serial://"+dev, "usb://"+dev+"-missing")
	rs := CheckDevices(env, cfg)
	wantResult(t, "accessible", rs[0], Pass, dev+": ", "")
	wantResult(t, "missing", rs[1], Fail, "no such file or directory", "plug the printer in")
	if rs[0].Name != "device of p0" {
		t.Errorf("name %q", rs[0].Name)
	}

	// A usb://VID:PID printer is checked at the device discovery finds.
	env.USB = func() ([]drivers.Found, error) {
		return []drivers.Found{{Kind: drivers.SchemeUSB, Name: dev, VendorID: 0x04b8, ProductID: 0x0202}}, nil
	}
	rs = CheckDevices(env, doctorConfig(t, t.TempDir(), ":8631", "", "usb://04b8:0202", "usb://1234:5678"))
	wantResult(t, "by id", rs[0], Pass, dev+": ", "")
	wantResult(t, "by id, absent", rs[1], Skip, "no USB printer 1234:5678 is attached", "")

	if os.Geteuid() == 0 {
		t.Log("not checking a denied device: root bypasses permissions")
		return
	}
	if err := os.Chmod(dev, 0o000); err != nil {
		t.Fatal(err)
	}
	r := CheckDevices(env, doctorConfig(t, t.TempDir(), ":8631", "", "serial://"+dev))[0]
	wantResult(t, "denied", r, Fail, "cannot read and write it (mode ----------, group ", "sudo chmod g+rw "+dev)
	os.Chmod(dev, 0o600) // owner-only: the group would need rw as well
	r = devicePermission(dev, drivers.SchemeSerial)
	wantResult(t, "owner only, accessible", r, Pass, "can read and write it", "")
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
	wantResult(t, "no cloud", CheckCloud(ctx, env, doctorConfig(t, t.TempDir(), ":8631", "")), Skip, "store-only", "")

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
	wantResult(t, "valid token", CheckCloud(ctx, env, paired(good, "pg-good")), Pass, "connected; the device token is accepted", "")
	if cloud.ConnectCount("pg-good") != 0 {
		t.Error("doctor said hello: the cloud counts it as the agent connecting")
	}
	wantResult(t, "not paired", CheckCloud(ctx, env, paired("", "pg-good")), Fail, "not paired: there is no device token at", "printgate pair --config ")
	wantResult(t, "unknown token", CheckCloud(ctx, env, paired("nope", "pg-good")), Fail, "refused the device token (HTTP 401)", "printgate pair again (the token was revoked)")
	revoked := cloud.IssueToken("pg-rev")
	cloud.Revoke(revoked)
	wantResult(t, "revoked token", CheckCloud(ctx, env, paired(revoked, "pg-rev")), Fail, "refused the device token (HTTP 401)", "printgate pair again (the token was revoked)")
	fresh := cloud.IssueToken("")
	wantResult(t, "agent never ran", CheckCloud(ctx, env, paired(fresh, "")), Warn, "the device token was not checked: the agent has not run yet", "start the agent")

	down := cloudConfig(t, "http://"+strings.TrimPrefix(closedURL(t), "tcp://"))
	pair.Save(down.DataDir, good)
	os.WriteFile(filepath.Join(down.DataDir, "agent-id"), []byte("pg-good"), 0o600)
	wantResult(t, "cloud down", CheckCloud(ctx, env, down), Fail, "cannot reach ws://127.0.0.1:", "check this PC's internet connection")
}

func TestDoctorClock(t *testing.T) {
	ctx := context.Background()
	env := testDoctorEnv()
	wantResult(t, "no cloud", CheckClock(ctx, env, doctorConfig(t, t.TempDir(), ":8631", "")), Skip, "no cloud", "")

	// The reference cloud, against this PC's real clock.
	cloud := cloudtest.New(cloudtest.Options{})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	wantResult(t, "reference cloud", CheckClock(ctx, env, cloudConfig(t, srv.URL)), Pass, "the cloud's clock", "")

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
		status Status
		detail string
	}{
		{2 * time.Second, Pass, "this PC is 2s ahead of the cloud's clock"},
		{-time.Minute, Warn, "this PC is 1m0s behind the cloud's clock"},
		{10 * time.Minute, Fail, "this PC is 10m0s ahead of the cloud's clock"},
	} {
		env.Now = func() time.Time { return cloudTime.Add(tc.local) }
		fix := ""
		if tc.status != Pass {
			fix = timeSyncFix
		}
		wantResult(t, tc.detail, CheckClock(ctx, env, cfg), tc.status, tc.detail, fix)
	}
	noDate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // suppress the server's own
	}))
	defer noDate.Close()
	wantResult(t, "no Date", CheckClock(ctx, env, cloudConfig(t, noDate.URL)), Warn, "no readable Date header", "by hand")
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
	rs := CheckRawPorts(env, cfg, false)
	if len(rs) != 2 {
		t.Fatalf("results %+v", rs)
	}
	wantResult(t, "free", rs[0], Pass, "free (the agent takes it", "")
	wantResult(t, "taken", rs[1], Fail, "cannot listen there", "give p1 a free raw_listen")

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
	rs = CheckRawPorts(env, cfg, true)
	wantResult(t, "agent's port", rs[0], Pass, "answers a POS's status query as a ready printer", "")
	wantResult(t, "other program", rs[1], Fail, "not a printer's status byte", "stop the program using port")
	if n := sink.jobs.Load(); n != 0 {
		t.Errorf("doctor's status query made %d jobs", n)
	}
}

// TestDoctorRawPortPrinterStatus: with raw_status = "printer" the running
// port answers the printer's own state, and an offline printer behind it
// (0x1e) is not taken for another program holding the port.
func TestDoctorRawPortPrinterStatus(t *testing.T) {
	env := testDoctorEnv()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	path := filepath.Join(t.TempDir(), "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:8631\"\napi_token = %q\n"+
		"[[printers]]\nname = \"p0\"\nurl = \"tcp://127.0.0.1:9100\"\nraw_listen = %q\nraw_status = \"printer\"\n",
		t.TempDir(), promiseToken, addr)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	port, err := rawport.Listen(addr, "p0", &okSink{}, rawport.Options{MaxJobBytes: 1 << 20,
		Status: func() rawport.PrinterStatus { return rawport.PrinterStatus{Offline: true} }})
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	rs := CheckRawPorts(env, cfg, true)
	wantResult(t, "offline printer behind raw_status printer", rs[0], Pass, "the printer's own state", "")
}

// TestDoctorTokenReaders ensures a config holding the token inline, or a
// token file, that other users can read is a warning with the fix, and one
// left to its owner passes.
func TestDoctorTokenReaders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits")
	}
	cfg := doctorConfig(t, t.TempDir(), ":8631", "")
	r, ok := CheckTokenReaders(cfg)
	if !ok {
		t.Fatal("no api token check for an inline token")
	}
	wantResult(t, "0600 config", r, Pass, "readable by its owner only", "")
	if err := os.Chmod(cfg.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ = CheckTokenReaders(cfg)
	wantResult(t, "0644 config", r, Warn, "holds the API token inline", "chmod 600 "+cfg.Path)
	tok := filepath.Join(t.TempDir(), "api-token.txt")
	if err := os.WriteFile(tok, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tok, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.APITokenFile = tok
	r, _ = CheckTokenReaders(cfg)
	wantResult(t, "0644 token file", r, Warn, "the API token file", "printgate token --out "+tok)
}
