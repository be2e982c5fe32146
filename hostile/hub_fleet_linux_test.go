package hostile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/internal/proctest"
)

// Passwords of the fleet page users the attacks below are aimed at.
const (
	fleetAnaPW   = "acme-ana-password"
	fleetBobPW   = "acme-bob-password"
	fleetRivalPW = "rival-eve-password"
)

// startHubWithUsers is startHub with fleet page users made by the CLI on
// the stopped hub: ana and bob of acme, eve of rival.
func startHubWithUsers(t *testing.T) *Hub {
	t.Helper()
	h := startHub(t)
	h.stop(t)
	hb := hubBin(t)
	for _, u := range [][3]string{{"acme", "ana", fleetAnaPW}, {"acme", "bob", fleetBobPW}, {"rival", "eve", fleetRivalPW}} {
		c := exec.Command(hb, "user", "add", "--config", h.Config, "--tenant", u[0], "--name", u[1], "--password-stdin")
		c.Stdin = strings.NewReader(u[2] + "\n")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("user add %s: %v\n%s", u[1], err, out)
		}
	}
	h.stderr, h.done = &proctest.Buffer{}, make(chan struct{})
	h.cmd = exec.Command(hb, "run", "--config", h.Config)
	h.cmd.Stdout, h.cmd.Stderr = h.stderr, h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.done) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) { // another process: nothing to wait on but its port
		if resp, err := h.client.Get(h.Base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub did not come up again:\n%s", h.stderr.String())
		}
	}
}

// fleetBrowser is a client of the fleet page from one loopback address, with
// cookies, following no redirect.
type fleetBrowser struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func (h *Hub) fleetBrowser(t *testing.T, from string) *fleetBrowser {
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &fleetBrowser{t: t, base: h.Base, hc: &http.Client{Jar: jar, Transport: tr, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *fleetBrowser) do(method, path string, form url.Values, hdr map[string]string) (int, http.Header, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(out)
}

var fleetCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *fleetBrowser) token(path string) string {
	b.t.Helper()
	status, _, body := b.do("GET", path, nil, nil)
	m := fleetCSRF.FindStringSubmatch(body)
	if status != 200 || m == nil {
		b.t.Fatalf("GET %s: %d, no form token", path, status)
	}
	return m[1]
}

func (b *fleetBrowser) login(tenant, name, pw string) (int, http.Header) {
	b.t.Helper()
	status, h, _ := b.do("POST", "/fleet/login", url.Values{"csrf": {b.token("/fleet/login")}, "tenant": {tenant}, "name": {name}, "password": {pw}}, nil)
	return status, h
}

// TestHubFleetPasswordGuessing guesses a fleet page user's password at the
// real hub from three loopback addresses in turn, as a guesser who changes
// address would: past ten wrong passwords within a minute the user is held
// (429 with Retry-After) from every address, the right password too, so
// the guesser gets nothing more; another user still signs in from a fresh
// address; the log holds a bounded number of lines for 60 guesses.
func TestHubFleetPasswordGuessing(t *testing.T) {
	h := startHubWithUsers(t)
	before := h.logLines()
	addrs := []*fleetBrowser{h.fleetBrowser(t, "127.0.0.2"), h.fleetBrowser(t, "127.0.0.3"), h.fleetBrowser(t, "127.0.0.4")}
	held := 0
	for i := range 60 {
		status, hdr := addrs[i%3].login("acme", "ana", fmt.Sprintf("guess-%04d-password", i))
		switch {
		case status == http.StatusTooManyRequests && hdr.Get("Retry-After") != "":
			held++
		case status == http.StatusUnauthorized && i < 10:
		default:
			t.Fatalf("guess %d: %d (Retry-After %q)", i, status, hdr.Get("Retry-After"))
		}
	}
	if held != 50 {
		t.Errorf("%d of 60 guesses held, want the 50 after the tenth", held)
	}
	fresh := h.fleetBrowser(t, "127.0.0.5")
	if status, hdr := fresh.login("acme", "ana", fleetAnaPW); status != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("the right password during the hold: %d, want 429", status)
	}
	if status, hdr := fresh.login("acme", "bob", fleetBobPW); status != http.StatusSeeOther || hdr.Get("Location") != "/fleet/" {
		t.Errorf("another user from a fresh address: %d %q, want signed in", status, hdr.Get("Location"))
	}
	n := h.logLines() - before
	t.Logf("60 guesses from 3 addresses: %d held, %d log lines", held, n)
	if n > 12 {
		t.Errorf("60 guesses wrote %d log lines, want a bounded few:\n%s", n, h.Logs())
	}
}

// TestHubFleetRebindingAndCrossSite sends the fleet page what a page of
// another site can make a signed-in manager's fleetBrowser send: requests for
// its own name pointed at the hub (DNS rebinding) are 421 and set no
// cookie, 50 of them cost at most a few log lines; a cross-site POST and
// a POST without the form's token decide nothing: the agent's pairing code
// stays pending.
func TestHubFleetRebindingAndCrossSite(t *testing.T) {
	h := startHubWithUsers(t)
	b := h.fleetBrowser(t, "127.0.0.2")
	before := h.logLines()
	for i := range 50 {
		status, hdr, _ := b.do("GET", "/fleet/login", nil, map[string]string{"Host": fmt.Sprintf("evil%d.example", i)})
		if status != http.StatusMisdirectedRequest || len(hdr.Values("Set-Cookie")) != 0 {
			t.Fatalf("rebound request %d: %d, cookies %q", i, status, hdr.Values("Set-Cookie"))
		}
	}
	n := h.logLines() - before
	t.Logf("50 rebound requests: %d log lines", n)
	if n > 7 {
		t.Errorf("50 rebound requests wrote %d log lines, want at most a few", n)
	}
	if status, _ := b.login("acme", "ana", fleetAnaPW); status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	code, device := h.deviceCode(t)
	tok := b.token("/fleet/pair")
	form := url.Values{"csrf": {tok}, "code": {code}, "store": {"a1"}, "decision": {"approve"}}
	if status, _, _ := b.do("POST", "/fleet/pair", form, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); status != http.StatusForbidden {
		t.Errorf("cross-site approval: %d, want 403", status)
	}
	form.Del("csrf")
	if status, _, _ := b.do("POST", "/fleet/pair", form, nil); status != http.StatusForbidden {
		t.Errorf("approval without the form token: %d, want 403", status)
	}
	if got := h.pollDevice(t, device); got != "authorization_pending" {
		t.Errorf("after the forged approvals the agent's poll is %q, want authorization_pending", got)
	}
}

// TestHubFleetOtherTenant has rival's user reach for acme through the
// page: acme's store's job page, a reprint of its job and an approval of
// a code for acme's store are the same 404 as what does not exist, the
// code stays pending, and guessing codes through the page is held by the
// same per-tenant bound as through the API (429 after ten unknown codes,
// the right one too).
func TestHubFleetOtherTenant(t *testing.T) {
	h := startHubWithUsers(t)
	if code, body, _ := h.call(t, "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"ACME-1","printer":"kitchen","document":{"lines":[{"text":"x"}]}}`); code != 202 {
		t.Fatalf("submit: %d %s", code, trim(body))
	}
	eve := h.fleetBrowser(t, "127.0.0.2")
	if status, _ := eve.login("rival", "eve", fleetRivalPW); status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	back := regexp.MustCompile(`back=[^"]*`)
	_, _, missing := eve.do("GET", "/fleet/stores/r1/jobs/NOPE", nil, nil)
	for _, path := range []string{"/fleet/stores/a1/jobs/ACME-1", "/fleet/stores/a1/jobs/NOPE", "/fleet/stores/zz/jobs/ACME-1"} {
		status, _, body := eve.do("GET", path, nil, nil)
		if status != 404 || back.ReplaceAllString(body, "") != back.ReplaceAllString(missing, "") {
			t.Errorf("GET %s: %d, want the 404 of a job that does not exist", path, status)
		}
	}
	tok := eve.token("/fleet/pair")
	if status, _, _ := eve.do("POST", "/fleet/stores/a1/jobs/ACME-1/cancel", url.Values{"csrf": {tok}, "id": {"x-1"}}, nil); status != 404 {
		t.Errorf("cancel of acme's job: %d, want 404", status)
	}
	code, device := h.deviceCode(t)
	if status, _, body := eve.do("POST", "/fleet/pair", url.Values{"csrf": {tok}, "code": {code}, "store": {"a1"}, "decision": {"approve"}}, nil); status != 404 || strings.Contains(body, "a1") {
		t.Errorf("approval for acme's store: %d, want 404 naming nothing of acme", status)
	}
	for i := range 10 {
		guess := fmt.Sprintf("BCDF-%s", strings.Repeat(string("GHJKLMNPQR"[i]), 4))
		if guess == code {
			continue
		}
		if status, _, _ := eve.do("POST", "/fleet/pair", url.Values{"csrf": {tok}, "code": {guess}, "store": {"r1"}, "decision": {"approve"}}, nil); status != 404 {
			t.Fatalf("guess %d: %d, want 404", i, status)
		}
	}
	status, hdr, _ := eve.do("POST", "/fleet/pair", url.Values{"csrf": {tok}, "code": {code}, "store": {"r1"}, "decision": {"approve"}}, nil)
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("the right code after ten guesses through the page: %d, want 429 with Retry-After", status)
	}
	if got := h.pollDevice(t, device); got != "authorization_pending" {
		t.Errorf("the waiting agent's poll is %q, want authorization_pending", got)
	}
	// Acme's own user is not held up by rival's guesses.
	ana := h.fleetBrowser(t, "127.0.0.3")
	if status, _ := ana.login("acme", "ana", fleetAnaPW); status != http.StatusSeeOther {
		t.Fatalf("ana signs in: %d", status)
	}
	if status, hdr, _ := ana.do("POST", "/fleet/pair", url.Values{"csrf": {ana.token("/fleet/pair")}, "code": {code}, "store": {"a1"}, "decision": {"approve"}}, nil); status != 303 {
		t.Errorf("acme approves the code for its store: %d %q", status, hdr.Get("Location"))
	}
}

// pollDevice polls the hub's token endpoint once for device and returns
// its OAuth error ("" when it got a token).
func (h *Hub) pollDevice(t *testing.T, device string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", h.Base+"/oauth/token", strings.NewReader(url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "client_id": {"printgate"}, "device_code": {device}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if m := regexp.MustCompile(`"error":"([a-z_]+)"`).FindSubmatch(b); m != nil {
		return string(m[1])
	}
	if bytes.Contains(b, []byte("access_token")) {
		return ""
	}
	return string(b)
}
