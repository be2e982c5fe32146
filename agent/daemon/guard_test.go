package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/agent/web"
)

// TestServiceGuardsTheListener ensures the listener RunService builds has the
// Host check in front of every handler, with allowed_hosts
// wired in, and that a first run with no PIN makes a setup code that the
// console shows, the data dir keeps, and no log tail carries.
func TestServiceGuardsTheListener(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	dir := t.TempDir()
	port := freeTCPPort(t)
	const token = "tok-0123456789abcdef01234"
	cfgPath := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\nallowed_hosts = [\"pos.example\"]\napi_token = %q\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9\"\n", dir, port, token)
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs lockedLog
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runService(ctx, cfgPath, &logs, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	line := regexp.MustCompile(`first-run setup code: (\d{4}-\d{4}) \(open (\S+) and type it; it is also in printgate status\)`)
	var m []string
	for deadline := time.Now().Add(waitLimit); m == nil; time.Sleep(10 * time.Millisecond) {
		if m = line.FindStringSubmatch(logs.String()); m == nil && time.Now().After(deadline) {
			t.Fatalf("no setup code line on the console:\n%s", logs.String())
		}
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d/setup", port); m[2] != want {
		t.Errorf("setup URL %q, want %q", m[2], want)
	}
	if code, err := web.LoadSetupCode(dir); err != nil || code != m[1] {
		t.Errorf("setup code in the data dir: %q %v, want %q", code, err, m[1])
	}

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path, host string
		want       int
	}{
		{"/healthz", "evil.example:" + fmt.Sprint(port), http.StatusMisdirectedRequest},
		{"/metrics", "evil.example", http.StatusMisdirectedRequest},
		{"/api/v1/printers", "evil.example", http.StatusMisdirectedRequest},
		{"/setup", "evil.example", http.StatusMisdirectedRequest},
		{"/healthz", "pos.example:" + fmt.Sprint(port), http.StatusOK},
		{"/api/v1/printers", "localhost", http.StatusOK},
		{"/setup", net.JoinHostPort("127.0.0.1", fmt.Sprint(port)), http.StatusOK},
	} {
		if code, body := get(tc.path, tc.host); code != tc.want {
			t.Errorf("GET %s with Host %s: %d %s, want %d", tc.path, tc.host, code, body, tc.want)
		}
	}
	code, tail := get("/api/v1/logs?lines=1000", "127.0.0.1")
	if code != http.StatusOK || !strings.Contains(tail, "printgate listening") {
		t.Fatalf("log tail: %d %s", code, tail)
	}
	if strings.Contains(tail, m[1]) || strings.Contains(tail, "first-run setup code") {
		t.Errorf("the log tail carries the setup code:\n%s", tail)
	}
	if !strings.Contains(logs.String(), "refused a request for a host this agent does not answer for") {
		t.Errorf("no WARN line for the refused Host:\n%s", logs.String())
	}
}

// TestSetupURL ensures the setup line names an address a browser on this
// PC reaches over loopback, and none for a listener bound to a LAN
// address, where setup from the browser cannot work.
func TestSetupURL(t *testing.T) {
	for _, tc := range []struct {
		addr string
		tls  bool
		want string
	}{
		{"127.0.0.1:8631", false, "http://127.0.0.1:8631/setup"},
		{"[::1]:8631", true, "https://[::1]:8631/setup"},
		{"0.0.0.0:9000", false, "http://127.0.0.1:9000/setup"},
		{"[::]:9000", false, "http://127.0.0.1:9000/setup"},
		{"192.168.1.10:8631", false, ""},
	} {
		a, _ := net.ResolveTCPAddr("tcp", tc.addr)
		got, ok := setupURL(a, tc.tls)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s tls=%v: %q %v, want %q", tc.addr, tc.tls, got, ok, tc.want)
		}
	}
}
