package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/sync/pair"
)

// instantClock is a clock.Clock on which every wait ends as soon as it is
// waited on, the clock jumping forward by the wait: a pairing runs through
// its polls without sleeping.
type instantClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *instantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *instantClock) NewTimer(d time.Duration) clock.Timer {
	t := &instantTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

type instantTimer struct {
	c     *instantClock
	ch    chan time.Time
	armed bool
	d     time.Duration
}

func (t *instantTimer) C() <-chan time.Time {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.armed {
		t.armed = false
		t.c.now = t.c.now.Add(max(t.d, 0))
		t.ch <- t.c.now
	}
	return t.ch
}

func (t *instantTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	select {
	case <-t.ch:
	default:
	}
	t.armed, t.d = true, d
}

func (t *instantTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.armed
	t.armed = false
	return was
}

// authServer is a minimal RFC 8628 server under /oauth: one code, and each
// poll answered with the next of answers (an OAuth error code, or "ok" for
// the token "tok-123"); the last answer repeats.
func authServer(t *testing.T, answers ...string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/device/code", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"device_code": "dc-1", "user_code": "WDJB-MJHT",
			"verification_uri":          srv.URL + "/device",
			"verification_uri_complete": srv.URL + "/device?user_code=WDJB-MJHT",
			"expires_in":                300, "interval": 5,
		})
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		answer := answers[0]
		if len(answers) > 1 {
			answers = answers[1:]
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("device_code") != "dc-1" {
			answer = "invalid_grant"
		}
		if answer == "ok" {
			json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-123", "token_type": "Bearer"})
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": answer})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// pairConfig writes a config whose [cloud] pairs at authURL (none when
// "") with one printer at printerURL, and returns its path and data dir.
func pairConfig(t *testing.T, authURL, printerURL string) (path, dataDir string) {
	t.Helper()
	dir := t.TempDir()
	cloud := ""
	if authURL != "" {
		cloud = fmt.Sprintf("[cloud]\nurl = \"ws://127.0.0.1:9/agent/v1\"\nauth_url = %q\n", authURL)
	}
	path = filepath.Join(dir, "printgate.toml")
	body := "data_dir = \"data\"\napi_token = \"x-0123456789abcdef0123456\"\n" + cloud +
		fmt.Sprintf("[[printers]]\nname = \"kitchen\"\nurl = %q\n", printerURL)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, filepath.Join(dir, "data")
}

func runPairCmd(t *testing.T, srv *httptest.Server, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := pairEnv{clock: &instantClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}, client: http.DefaultClient}
	if srv != nil {
		env.client = srv.Client()
	}
	code = pairCmd(context.Background(), env, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestPairEndToEnd ensures `printgate pair --print-qr` shows the code, the
// address and its QR, prints them on the receipt printer, waits through
// authorization_pending with a progress line, saves the approved token in
// the data dir and exits 0.
func TestPairEndToEnd(t *testing.T) {
	srv := authServer(t, "authorization_pending", "authorization_pending", "slow_down", "ok")
	printer, printerURL := startEmulator(t, printertest.ModelEpson, "")
	cfg, dataDir := pairConfig(t, srv.URL+"/oauth", printerURL)

	code, out, errOut := runPairCmd(t, srv, "--config", cfg, "--print-qr", "kitchen")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	url := srv.URL + "/device?user_code=WDJB-MJHT"
	for _, want := range []string{"WDJB-MJHT", url, "▀", "waiting for approval… (expires in 4m)", "Printed the QR code", "Paired."} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// The progress line is said once a minute, not at every poll.
	if n := strings.Count(out, "waiting for approval"); n != 1 {
		t.Errorf("%d progress lines for polls within one minute, want 1", n)
	}
	if token, err := pair.Load(dataDir); err != nil || token != "tok-123" {
		t.Errorf("saved token %q, %v", token, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tickets, err := printer.WaitTickets(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	tk := tickets[0]
	if !tk.Contains("WDJB-MJHT") || len(tk.QR) != 1 || tk.QR[0] != url {
		t.Errorf("ticket text %q, QR %q; want the code and a QR of %s", tk.Text(), tk.QR, url)
	}
}

// TestPairFails ensures a config without [cloud], an unknown --print-qr
// printer, a refused and an expired pairing each end with a clear message
// and the right exit code, and save no token.
func TestPairFails(t *testing.T) {
	noCloud, _ := pairConfig(t, "", "tcp://127.0.0.1:9100")
	if code, _, errOut := runPairCmd(t, nil, "--config", noCloud); code != 1 || !strings.Contains(errOut, "has no [cloud] table with an auth_url") {
		t.Errorf("no [cloud]: exit %d, %q", code, errOut)
	}
	srv := authServer(t, "ok")
	cfg, dataDir := pairConfig(t, srv.URL+"/oauth", "tcp://127.0.0.1:9100")
	if code, _, errOut := runPairCmd(t, srv, "--config", cfg, "--print-qr", "bar"); code != 2 || !strings.Contains(errOut, `--print-qr "bar"`) || !strings.Contains(errOut, "kitchen") {
		t.Errorf("unknown printer: exit %d, %q", code, errOut)
	}
	for _, tc := range []struct{ answer, msg string }{
		{"access_denied", "printgate pair: the pairing was refused in the cloud\n"},
		{"expired_token", "printgate pair: the code expired: run printgate pair again\n"},
	} {
		srv := authServer(t, "authorization_pending", tc.answer)
		cfg, dataDir := pairConfig(t, srv.URL+"/oauth", "tcp://127.0.0.1:9100")
		if code, _, errOut := runPairCmd(t, srv, "--config", cfg); code != 1 || errOut != tc.msg {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.answer, code, errOut, tc.msg)
		}
		if _, err := pair.Load(dataDir); err == nil {
			t.Errorf("%s: a token was saved", tc.answer)
		}
	}
	if _, err := pair.Load(dataDir); err == nil {
		t.Error("a token was saved after a usage error")
	}
	if code, _, _ := runPairCmd(t, nil, "extra"); code != 2 {
		t.Errorf("extra argument: exit %d", code)
	}
	if code, _, _ := runPairCmd(t, nil, "--help"); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
}

// TestUnpair ensures `printgate unpair` removes the device token, and says
// so when there is none.
func TestUnpair(t *testing.T) {
	cfg, dataDir := pairConfig(t, "", "tcp://127.0.0.1:9100")
	if err := pair.Save(dataDir, "tok-123"); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := runUnpair([]string{"--config", cfg}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Unpaired: removed") {
		t.Fatalf("unpair: exit %d, %q %q", code, out.String(), errOut.String())
	}
	if _, err := pair.Load(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token still there: %v", err)
	}
	out.Reset()
	if code := runUnpair([]string{"--config", cfg}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Not paired") {
		t.Errorf("unpair again: exit %d, %q", code, out.String())
	}
	if _, ok := commands["pair"]; !ok {
		t.Error("pair is not registered")
	}
	if _, ok := commands["unpair"]; !ok {
		t.Error("unpair is not registered")
	}
}
