package hostile

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"printgate/sync/cloudtest"
)

// TestCloudAuthInClearRefused is the attack on the wire: pairing once took
// auth_url = "http://…" to any host, so a device code and the device token
// crossed the store's network in clear, while the link refused ws:// for
// the same reason. Only this machine may be spoken to in clear; anything
// else is refused at config load, with the line named. (The agent is run
// without a device token, so even the old code contacts nothing.)
func TestCloudAuthInClearRefused(t *testing.T) {
	a := start(t, Setup{
		Tables: "[cloud]\nurl = \"wss://cloud.printgate.invalid/agent\"\nauth_url = \"http://192.0.2.7/oauth\"\n",
		NoWait: true,
	})
	if !a.Exited(20 * time.Second) {
		t.Fatalf("the agent started with auth_url in clear to another host:\n%s", a.Logs())
	}
	out := a.Logs()
	for _, want := range []string{"auth_url", "https://"} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`printgate\.toml:\d+: auth_url`).MatchString(out) {
		t.Errorf("refusal does not name the file and line of auth_url:\n%s", out)
	}
}

// TestTokenOutPrivate is the attack on disk through the README's own
// step: `printgate token > api-token.txt` made a 0644 file. `printgate
// token --out FILE` writes it readable by its owner only, whatever the
// umask.
func TestTokenOutPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits")
	}
	f := filepath.Join(t.TempDir(), "api-token.txt")
	cmd := exec.Command(bin, "token", "--out", f)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("printgate token --out: %v\n%s", err, out)
	}
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("token file is %04o, want 0600", perm)
	}
	b, _ := os.ReadFile(f)
	if tok := strings.TrimSpace(string(b)); len(tok) < 32 {
		t.Errorf("token %q is too short", tok)
	}
}

// TestDataDirTightenedAndTokenFileWarned is the rest of §6 on disk: a data
// dir that already existed at 0755 stayed 0755 (the spool, device token
// and PIN readable by every user), and a 0644 token file was not warned
// about. At start the dir is 0700 and the log says what to run.
func TestDataDirTightenedAndTokenFileWarned(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits")
	}
	a := start(t, Setup{TokenFile: true, Before: func(dir string) {
		if err := os.Chmod(dir, 0o755); err != nil {
			panic(err)
		}
	}})
	fi, err := os.Stat(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("data dir is %04o after start, want 0700", perm)
	}
	out := a.Logs()
	for _, want := range []string{"API token file can be read by other users", "chmod 600", "printgate token --out"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if code := a.submit(t, "TOKENFILE-1"); code != 202 && code != 200 {
		t.Errorf("the token from the file does not work: HTTP %d", code)
	}
}

// TestInlineTokenInReadableConfigWarned is the pen-test's §5 on disk: a
// 0644 token file was warned about, but the same token written inline as
// api_token in a 0644 config was not, though every user of the PC can read
// it as well. The log and printgate doctor both say so, with the fix.
func TestInlineTokenInReadableConfigWarned(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits")
	}
	a := start(t, Setup{Before: func(dir string) {
		if err := os.Chmod(filepath.Join(dir, "printgate.toml"), 0o644); err != nil {
			panic(err)
		}
	}})
	out := a.Logs()
	for _, want := range []string{"the config holds the API token and can be read by other users", "chmod 600 " + a.Config, "api_token_file"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	doc, _ := exec.Command(bin, "doctor", "--config", a.Config).CombinedOutput()
	if !regexp.MustCompile(`! api token: .*can be read by other users`).Match(doc) || !strings.Contains(string(doc), "chmod 600 "+a.Config) {
		t.Errorf("printgate doctor does not warn about the readable config:\n%s", doc)
	}
}

// TestPairingCodeNotInLogRing is the pen-test's §5 in the log: the
// pairing page's user_code was logged at INFO, so anyone holding the API
// token (GET /api/v1/logs), or a cloud tailing the log, could read it and
// approve the agent into an account of their own before the manager did.
// The code shows on the manager's pairing page only.
func TestPairingCodeNotInLogRing(t *testing.T) {
	cloud := cloudtest.New(cloudtest.Options{PollInterval: time.Second})
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { cloud.Close() })
	ws := "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath
	a := start(t, Setup{Tables: fmt.Sprintf("[cloud]\nurl = %q\nauth_url = %q\n", ws, srv.URL+"/oauth")})
	setPIN(t, a, rebindPIN)
	b := newBrowser(t, a, "127.0.0.1:"+a.port(t))
	_, login, _ := b.send("GET", "/login", nil, nil)
	if st, body, _ := b.send("POST", "/login", url.Values{"csrf": {csrfIn(login)}, "pin": {rebindPIN}}, nil); st != http.StatusSeeOther {
		t.Fatalf("login: %d %.300q", st, body)
	}
	st, page, _ := b.send("GET", "/pairing", nil, nil)
	m := regexp.MustCompile(`id="user-code" class="user-code">([^<]+)<`).FindStringSubmatch(page)
	if st != http.StatusOK || m == nil {
		t.Fatalf("the pairing page shows no code: %d %.500q", st, page)
	}
	code := m[1]
	st, ring, _ := a.do(t, "GET", "/api/v1/logs?lines=1000", "", map[string]string{"Authorization": "Bearer " + a.Token})
	if st != http.StatusOK || !strings.Contains(ring, "pairing: code issued") {
		t.Fatalf("GET /api/v1/logs: %d, without the pairing line:\n%s", st, ring)
	}
	if strings.Contains(ring, code) {
		t.Errorf("the log ring, which every API-token holder reads, carries the pairing code %s:\n%s", code, ring)
	}
	if strings.Contains(a.Logs(), code) {
		t.Errorf("the agent's log carries the pairing code %s", code)
	}
}
