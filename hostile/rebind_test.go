package hostile

// Attacks of a web page in the manager's browser: DNS
// rebinding, where evil.example's name is made to resolve to 127.0.0.1 so
// the page's requests reach the agent with "Host: evil.example" and their
// answers are the page's to read, and cross-site POSTs riding on the
// manager's session. The requests are sent to 127.0.0.1 with the Host and
// headers such a browser sends; nothing leaves the machine.

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const rebindPIN = "864213"

// port is the port of a's listener.
func (a *Agent) port(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(a.Base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// browser is a cookie-keeping HTTP client that sends every request to the
// agent's loopback address, with the Host header a page's origin gives it.
type browser struct {
	t      *testing.T
	a      *Agent
	host   string
	client *http.Client
}

func newBrowser(t *testing.T, a *Agent, host string) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, a: a, host: host, client: &http.Client{
		Jar:           jar,
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// send sends one request and returns the status, body and headers.
func (b *browser) send(method, path string, form url.Values, header map[string]string) (int, string, http.Header) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.a.Base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Host = b.host
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s (Host %s): %v", method, path, b.host, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(data), resp.Header
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfIn is the CSRF token of the first form in a page, "" when none.
func csrfIn(page string) string {
	if m := csrfField.FindStringSubmatch(page); m != nil {
		return m[1]
	}
	return ""
}

// pinIsSet reports whether the agent has a manager PIN, as the page tells a
// browser on the PC: without one, /login sends it to /setup.
func pinIsSet(t *testing.T, a *Agent) bool {
	t.Helper()
	code, _, h := newBrowser(t, a, "127.0.0.1:"+a.port(t)).send("GET", "/login", nil, nil)
	return !(code == http.StatusSeeOther && h.Get("Location") == "/setup")
}

var setupCodeLine = regexp.MustCompile(`first-run setup code: (\d{4}-\d{4})`)

// setupCode waits up to d for the first-run setup code in the agent's
// output; "" when none came.
func (a *Agent) setupCode(d time.Duration) string {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if m := setupCodeLine.FindStringSubmatch(a.Logs()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			return ""
		}
	}
}

// status runs `printgate status` on the agent's config and returns its
// output (its exit code says whether the service is installed, which it
// is not here).
func (a *Agent) status(t *testing.T) string {
	t.Helper()
	out, _ := exec.Command(bin, "status", "--config", a.Config).CombinedOutput()
	return string(out)
}

// TestRebindingHostGetsNothing: a page at evil.example, its name rebound to
// 127.0.0.1, cannot set the first PIN (even knowing the setup code), read
// /metrics or /healthz, or call the API (even with the token): every
// request with its Host is refused before any handler.
func TestRebindingHostGetsNothing(t *testing.T) {
	a := start(t, Setup{})
	evil := newBrowser(t, a, "evil.example:"+a.port(t))
	code := a.setupCode(2 * time.Second) // the attacker is given it, to test the Host check alone

	status, page, _ := evil.send("GET", "/setup", nil, nil)
	form := url.Values{"csrf": {csrfIn(page)}, "code": {code}, "pin": {rebindPIN}, "pin2": {rebindPIN}}
	if st, body, _ := evil.send("POST", "/setup", form, nil); st == http.StatusSeeOther || pinIsSet(t, a) {
		t.Fatalf("a rebinding page set the first PIN (GET /setup %d, POST /setup %d %.200q)", status, st, body)
	}
	if status != http.StatusMisdirectedRequest {
		t.Errorf("GET /setup with Host evil.example: %d, want 421", status)
	}
	if !strings.Contains(page, "allowed_hosts") {
		t.Errorf("the refusal does not name allowed_hosts: %.300q", page)
	}
	for _, path := range []string{"/metrics", "/healthz"} {
		if st, body, _ := evil.send("GET", path, nil, nil); st != http.StatusMisdirectedRequest || strings.Contains(body, "printgate_") || strings.Contains(body, `"status"`) {
			t.Errorf("GET %s with Host evil.example: %d %.200q, want 421 and nothing of the agent", path, st, body)
		}
	}
	auth := map[string]string{"Authorization": "Bearer " + a.Token, "Content-Type": "application/json"}
	if st, body, _ := evil.send("GET", "/api/v1/tasks", nil, auth); st != http.StatusMisdirectedRequest || !strings.Contains(body, `"misdirected_request"`) {
		t.Errorf("GET /api/v1/tasks with Host evil.example: %d %.200q, want 421 misdirected_request", st, body)
	}
	req, _ := http.NewRequest("POST", a.Base+"/api/v1/tasks", strings.NewReader(`{"task_no":"EVIL_v1","printer":"p0","document":{"lines":[{"text":"EVIL"}]}}`))
	req.Host = evil.host
	for k, v := range auth {
		req.Header.Set(k, v)
	}
	if resp, err := evil.client.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("POST /api/v1/tasks with Host evil.example: %d, want 421", resp.StatusCode)
	}
	// The store's own requests still work.
	if code := a.submit(t, "REBIND_OK_v1"); code != http.StatusAccepted {
		t.Fatalf("the POS's submit: %d", code)
	}
	ctx, cancel := contextWithTimeout(t, 30)
	defer cancel()
	tickets, err := a.Printer.WaitTickets(ctx, 1)
	if err != nil {
		t.Fatalf("the POS's ticket was not printed: %v", err)
	}
	for _, tk := range tickets {
		if strings.Contains(tk.Text(), "EVIL") {
			t.Error("the rebinding page's ticket was printed")
		}
	}
}

// TestForeignHostCannotLockOutPOS: ten bad tokens sent with a foreign Host
// from the store PC's address do not lock the store's own POS, which sends
// the right token to 127.0.0.1, out of the API: it still prints. Nor do
// bad tokens under another name the agent answers for (counted apart), nor
// even under the POS's own Host 127.0.0.1 (the right token always passes).
func TestForeignHostCannotLockOutPOS(t *testing.T) {
	a := start(t, Setup{})
	port := a.port(t)
	for _, host := range []string{"evil.example:" + port, "localhost:" + port, "127.0.0.1:" + port} {
		page := newBrowser(t, a, host)
		for range 11 {
			page.send("GET", "/api/v1/printers", nil, map[string]string{"Authorization": "Bearer wrong-token-guess-0123456789"})
		}
		taskNo := "LOCKOUT_" + strings.Split(host, ":")[0] + "_v1"
		if code := a.submit(t, taskNo); code != http.StatusAccepted {
			t.Fatalf("after 11 bad tokens with Host %s, the POS's submit with the right token: %d, want 202", host, code)
		}
	}
	ctx, cancel := contextWithTimeout(t, 30)
	defer cancel()
	if _, err := a.Printer.WaitTickets(ctx, 3); err != nil {
		t.Fatalf("the POS's tickets were not printed: %v", err)
	}
}

// TestCrossSitePostWithSessionRefused: a page of another site that makes
// the signed-in manager's browser POST to the page (with the session
// cookie and even the CSRF token) is refused 403, and nothing happens: no
// test ticket prints and the session survives. The page's own POSTs work.
func TestCrossSitePostWithSessionRefused(t *testing.T) {
	a := start(t, Setup{})
	pin := exec.Command(bin, "pin", "set", "--config", a.Config, "--pin-stdin")
	pin.Stdin = strings.NewReader(rebindPIN + "\n")
	if out, err := pin.CombinedOutput(); err != nil {
		t.Fatalf("printgate pin set: %v\n%s", err, out)
	}
	self := "127.0.0.1:" + a.port(t)
	b := newBrowser(t, a, self)
	_, login, _ := b.send("GET", "/login", nil, nil)
	if st, body, _ := b.send("POST", "/login", url.Values{"csrf": {csrfIn(login)}, "pin": {rebindPIN}}, nil); st != http.StatusSeeOther {
		t.Fatalf("login: %d %.300q", st, body)
	}
	st, dash, _ := b.send("GET", "/", nil, nil)
	token := csrfIn(dash)
	if st != http.StatusOK || token == "" {
		t.Fatalf("dashboard: %d, csrf %q", st, token)
	}
	for _, h := range []map[string]string{
		{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://evil.example"}, // a browser too old for Sec-Fetch-Site
		{"Origin": "http://127.0.0.1:9", "Sec-Fetch-Site": "same-site"},
	} {
		if st, body, _ := b.send("POST", "/printers/p0/test", url.Values{"csrf": {token}}, h); st != http.StatusForbidden {
			t.Errorf("cross-site POST /printers/p0/test %v: %d %.200q, want 403", h, st, body)
		}
		if st, _, _ := b.send("POST", "/logout", url.Values{"csrf": {token}}, h); st != http.StatusForbidden {
			t.Errorf("cross-site POST /logout %v: %d, want 403", h, st)
		}
	}
	if st, _, _ := b.send("GET", "/", nil, nil); st != http.StatusOK {
		t.Errorf("after the refused logouts the dashboard answers %d: the session ended", st)
	}
	if n := len(a.Printer.Tickets()); n != 0 {
		t.Fatalf("a refused cross-site POST printed %d tickets", n)
	}
	own := map[string]string{"Origin": "http://" + self, "Sec-Fetch-Site": "same-origin"}
	if st, body, _ := b.send("POST", "/printers/p0/test", url.Values{"csrf": {token}}, own); st != http.StatusSeeOther {
		t.Fatalf("the page's own test print: %d %.200q, want 303", st, body)
	}
	ctx, cancel := contextWithTimeout(t, 30)
	defer cancel()
	if _, err := a.Printer.WaitTickets(ctx, 1); err != nil {
		t.Fatalf("the page's own test print did not print: %v", err)
	}
}

// TestSetupNeedsCode: on the PC itself, /setup without the one-time code,
// or with a wrong one, sets no PIN; with the code the agent printed at
// start (and printgate status shows) it does, and the code is then gone.
func TestSetupNeedsCode(t *testing.T) {
	a := start(t, Setup{})
	b := newBrowser(t, a, "127.0.0.1:"+a.port(t))
	_, page, _ := b.send("GET", "/setup", nil, nil)
	tok := csrfIn(page)
	for _, code := range []string{"", "0000-0001"} {
		form := url.Values{"csrf": {tok}, "pin": {rebindPIN}, "pin2": {rebindPIN}}
		if code != "" {
			form.Set("code", code)
		}
		if st, body, _ := b.send("POST", "/setup", form, nil); st == http.StatusSeeOther || pinIsSet(t, a) {
			t.Fatalf("setup with code %q set the PIN (%d %.200q)", code, st, body)
		}
	}
	code := a.setupCode(10 * time.Second)
	if code == "" {
		t.Fatalf("printgate run printed no first-run setup code:\n%s", a.Logs())
	}
	if st := a.status(t); !strings.Contains(st, "first-run setup code: "+code) {
		t.Errorf("printgate status does not show the code %s:\n%s", code, st)
	}
	form := url.Values{"csrf": {tok}, "code": {code}, "pin": {rebindPIN}, "pin2": {rebindPIN}}
	if st, body, _ := b.send("POST", "/setup", form, nil); st != http.StatusSeeOther || !pinIsSet(t, a) {
		t.Fatalf("setup with the code: %d %.300q, want 303 and the PIN set", st, body)
	}
	if st := a.status(t); strings.Contains(st, "setup code") {
		t.Errorf("printgate status still shows a setup code once the PIN is set:\n%s", st)
	}
	if _, err := os.Stat(a.Dir + "/setup-code"); !os.IsNotExist(err) {
		t.Errorf("the setup code file outlived the PIN: %v", err)
	}
}

// TestAllowedHostsOnOpenListener: on a listener open to the network, a name
// listed in allowed_hosts (a POS's own DNS name for the PC) and this
// computer's own name are accepted, and any other name is still refused.
// The listener is on 0.0.0.0, but every request goes to 127.0.0.1.
func TestAllowedHostsOnOpenListener(t *testing.T) {
	listen := net.JoinHostPort("0.0.0.0", strconv.Itoa(freePort(t)))
	a := start(t, Setup{Listen: listen, Top: `allowed_hosts = ["pos.example"]`})
	p := a.port(t)
	auth := map[string]string{"Authorization": "Bearer " + a.Token, "Content-Type": "application/json"}
	pos := newBrowser(t, a, "pos.example:"+p)
	if st, body, _ := pos.send("GET", "/api/v1/printers", nil, auth); st != http.StatusOK {
		t.Fatalf("GET /api/v1/printers with Host pos.example: %d %.200q, want 200", st, body)
	}
	if st, _, _ := newBrowser(t, a, "POS.example.").send("GET", "/healthz", nil, nil); st != http.StatusOK {
		t.Errorf("Host POS.example. (case, trailing dot): %d, want 200", st)
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		if st, _, _ := newBrowser(t, a, name+":"+p).send("GET", "/healthz", nil, nil); st != http.StatusOK {
			t.Errorf("Host %s (this computer's name) on an open listener: %d, want 200", name, st)
		}
	}
	if st, body, _ := newBrowser(t, a, "evil.example:"+p).send("GET", "/api/v1/printers", nil, auth); st != http.StatusMisdirectedRequest || !strings.Contains(body, "allowed_hosts") {
		t.Errorf("Host evil.example on an open listener: %d %.200q, want 421 naming allowed_hosts", st, body)
	}
}
