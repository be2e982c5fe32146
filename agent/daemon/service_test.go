package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent"
	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/agent/tlscert"
	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// waitLimit bounds every wait on another goroutine or process.
const waitLimit = 20 * time.Second

// testLogger discards logs unless PRINTGATE_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("PRINTGATE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// panicPrinter is a printer driver with a bug: its Print panics.
type panicPrinter struct{ agent.Printer }

func (panicPrinter) Print(context.Context, []byte, uint64) (escpos.Confirmation, error) {
	panic("test: driver bug")
}

// lockedLog collects log output written from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestCoreFailureStopsIntake runs the service path (config, spool,
// listener) with a printer driver that panics: the core stops, intake
// answers 503 unavailable while the process lingers, /healthz answers 503
// "failed", and the service returns the cause so `printgate run` exits
// non-zero.
func TestCoreFailureStopsIntake(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir := t.TempDir()
	port := freeTCPPort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfgPath := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = \"tok-0123456789abcdef01234\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n", dir, port, p.Addr())
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	old := CoreFailLinger
	CoreFailLinger = 10 * time.Second
	defer func() { CoreFailLinger = old }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runService(ctx, cfgPath, io.Discard, func(o *agent.Options) {
			open := o.OpenPrinter
			if open == nil {
				open = agent.OpenDevice
			}
			o.OpenPrinter = func(pc *config.Printer) agent.Printer { return panicPrinter{open(pc)} }
		})
	}()
	post := func(no string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(`{"task_no":"`+no+`","printer":"k","payload":"eA=="}`))
		req.Header.Set("Authorization", "Bearer tok-0123456789abcdef01234")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	health := func() (int, api.Health) {
		var h api.Health
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return 0, h
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&h)
		return resp.StatusCode, h
	}
	// The listener is another goroutine's: poll it, bounded.
	deadline := time.Now().Add(waitLimit)
	for code, _ := health(); code != http.StatusOK; code, _ = health() {
		if time.Now().After(deadline) {
			t.Fatal("service did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := post("BOOM_v1"); code != http.StatusAccepted {
		t.Fatalf("first submit: %d %s", code, body)
	}
	var h api.Health
	code := 0
	for code, h = health(); code != http.StatusServiceUnavailable; code, h = health() {
		if time.Now().After(deadline) {
			t.Fatalf("healthz never reported the failed core: %d %+v", code, h)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h.Status != "failed" || !strings.Contains(h.Error, "panicked") || strings.Contains(h.Error, "goroutine") {
		t.Errorf("healthz %+v: want status failed with a one-line cause", h)
	}
	if code, body := post("AFTER_v1"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"unavailable"`) {
		t.Errorf("submit after the core failed: %d %s, want 503 unavailable", code, body)
	}
	cancel() // end the linger early
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Errorf("service returned %v, want the core failure", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("service did not end after its core failed")
	}
}

// TestStoreOnlyWritesNoOutbox ensures an agent without a [cloud] table
// writes no outbox events (nothing would ever read or delete them), so a
// store-only install does not grow its spool without bound.
func TestStoreOnlyWritesNoOutbox(t *testing.T) {
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg, err := config.Parse("/x/printgate.toml", []byte(fmt.Sprintf("data_dir = %q\napi_token = \"tok-0123456789abcdef01234\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n", t.TempDir(), p.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	if o := spoolOptions(cfg); !o.Outbox.Disabled {
		t.Fatalf("store-only config: outbox %+v, want disabled", o.Outbox)
	}
	sp, err := spool.Open(filepath.Join(t.TempDir(), "spool.db"), spoolOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	printed := make(chan string, 3)
	a, err := agent.New(cfg, sp, agent.Options{Logger: testLogger(), Observe: func(e agent.Event) {
		if e.Task != nil && e.Task.State == spool.StatePrinted {
			printed <- e.Task.TaskNo
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-a.Ready()
	for _, no := range []string{"A_v1", "B_v1", "C_v1"} {
		nt := spool.NewTask{TaskNo: no, Printer: "k", Document: []byte(fmt.Sprintf(`{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}`, no))}
		if _, dup, err := a.Submit(ctx, nt); err != nil || dup {
			t.Fatalf("submit %s: dup=%v err=%v", no, dup, err)
		}
		select {
		case got := <-printed:
			if got != no {
				t.Fatalf("printed %s, want %s", got, no)
			}
		case <-time.After(waitLimit):
			t.Fatalf("%s never printed", no)
		}
	}
	if hl := a.Health(); hl.Outbox != 0 || hl.Status != "ok" {
		t.Errorf("store-only health %+v, want an empty outbox", hl)
	}
	cloudCfg, err := config.Parse("/x/printgate.toml", []byte("api_token = \"tok-0123456789abcdef01234\"\n[cloud]\nurl = \"wss://c.example/a\"\nauth_url = \"https://c.example/o\"\noutbox_max_events = 5000\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o := spoolOptions(cloudCfg); o.Outbox.Disabled || o.Outbox.MaxEvents != 5000 || o.Outbox.MaxAge != 7*24*time.Hour {
		t.Errorf("cloud config: outbox %+v, want enabled, 5000 events, 7 days", o.Outbox)
	}
}

// TestBackupShortfallsWarned ensures `printgate run` warns at start about
// each thing a backup cannot print that its primary can.
func TestBackupShortfallsWarned(t *testing.T) {
	cfg, err := config.Parse("/x/printgate.toml", []byte("api_token = \"tok-0123456789abcdef01234\"\n"+
		"[[printers]]\nname = \"kitchen\"\nurl = \"tcp://127.0.0.1:9\"\nprofile = \"xprinter-80\"\nbackup = \"bar\"\n"+
		"[[printers]]\nname = \"bar\"\nurl = \"tcp://127.0.0.1:10\"\nprofile = \"epson-58\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedLog
	warnBackups(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	out := logs.String()
	for _, want := range []string{"level=WARN", "printer=kitchen", "backup=bar", "encoding", "paper"} {
		if !strings.Contains(out, want) {
			t.Errorf("backup warnings lack %q:\n%s", want, out)
		}
	}
	logs = lockedLog{}
	warnBackups(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if n := strings.Count(logs.String(), "\n"); n < 2 {
		t.Errorf("want one line per shortfall, got %d:\n%s", n, logs.String())
	}
}

// TestServiceServesTLS ensures tls = "self-signed" serves the API over
// HTTPS with a certificate whose fingerprint the start log names, so a POS
// can pin it, and that the certificate survives a restart.
func TestServiceServesTLS(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	dir := t.TempDir()
	port := freeTCPPort(t)
	cfgPath := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = \"tok-0123456789abcdef01234\"\ntls = \"self-signed\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9\"\n", dir, port)
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var fps []string
	for run := 0; run < 2; run++ {
		var logs lockedLog
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runService(ctx, cfgPath, &logs, nil) }()
		// The pin: the fingerprint printed at start.
		var fp string
		deadline := time.Now().Add(waitLimit)
		for fp == "" {
			if _, rest, ok := strings.Cut(logs.String(), "tls_fingerprint="); ok {
				fp, _, _ = strings.Cut(rest, "\n")
				fp = strings.Fields(fp)[0]
			} else if time.Now().After(deadline) {
				t.Fatalf("no tls_fingerprint in the start log:\n%s", logs.String())
			} else {
				time.Sleep(10 * time.Millisecond)
			}
		}
		fps = append(fps, fp)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // verified by the pin below instead
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if got := tlscert.Fingerprint(raw[0]); got != fp {
					return fmt.Errorf("fingerprint %s, pinned %s", got, fp)
				}
				return nil
			},
		}}}
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		if err != nil {
			t.Fatalf("healthz over pinned TLS: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		client.CloseIdleConnections()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("healthz over TLS: %d", resp.StatusCode)
		}
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Error("plain HTTP answered 200 on the TLS listener")
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if fps[0] != fps[1] {
		t.Errorf("the certificate changed across a restart: %s then %s", fps[0], fps[1])
	}
}
