package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"printgate/spool"
)

// pageRoutes are the GET pages that need a session.
var pageRoutes = []string{
	"/", "/tasks", "/tasks?q=x", "/tasks/T1", "/tasks/T1/reprint", "/tasks/T1/retry", "/tasks/T1/cancel",
	"/printers", "/pairing", "/logs",
}

// streamRoutes are the event streams and fragments a script reads.
var streamRoutes = []string{"/events", "/logs/stream", "/printers/scan", "/?fragment=live"}

// postRoutes are every state-changing route that needs a session.
var postRoutes = []string{
	"/logout", "/alerts/1/ack", "/tasks/T1/reprint", "/tasks/T1/retry", "/tasks/T1/cancel",
	"/printers/kitchen/test", "/printers/scan", "/pairing/unpair",
}

// TestAnonymousRefused ensures no page, stream or action answers without a
// session: pages redirect to the login, streams answer 401, and no action
// reaches the backend.
func TestAnonymousRefused(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	h.f.add("T1", spool.StatePrinted, time.Now(), "")
	for _, path := range pageRoutes {
		t.Run("GET "+path, func(t *testing.T) {
			wantRedirect(t, h.get(anon(), path), "/login")
		})
	}
	for _, path := range streamRoutes {
		t.Run("GET "+path, func(t *testing.T) {
			wantStatus(t, h.get(anon(), path), http.StatusUnauthorized)
		})
	}
	for _, path := range postRoutes {
		t.Run("POST "+path, func(t *testing.T) {
			w := h.post(anon(), path, url.Values{"pin": {testPIN}, "printer": {"bar"}})
			wantRedirect(t, w, "/login")
		})
	}
	// A stale or forged session cookie is anonymous too.
	forged := &client{cookies: []*http.Cookie{{Name: sessionCookie, Value: randomToken()}}}
	wantRedirect(t, h.get(forged, "/"), "/login")
	if calls := h.f.Calls(); len(calls) != 0 {
		t.Fatalf("anonymous requests reached the backend: %v", calls)
	}
}

// TestSetupOnlyFromLoopbackWithoutPIN ensures the first PIN can be set only
// from this PC, with the setup code, and only while none is set.
func TestSetupOnlyFromLoopbackWithoutPIN(t *testing.T) {
	h := newHarness(t)
	code := h.setupCode()
	remote := &client{remote: "192.0.2.7:5555"}
	w := h.get(remote, "/setup")
	wantStatus(t, w, http.StatusForbidden)
	wantBody(t, w, pinCommand)
	// From afar, the login page explains how to set the PIN.
	w = h.get(remote, "/login")
	wantStatus(t, w, http.StatusForbidden)
	wantBody(t, w, pinCommand)
	// A POST from afar is refused even with a valid form token.
	remote.cookies = []*http.Cookie{{Name: preCookie, Value: strings.Repeat("a", 43)}}
	w = h.do(remote, http.MethodPost, "/setup", url.Values{"csrf": {strings.Repeat("a", 43)}, "code": {code}, "pin": {testPIN}, "pin2": {testPIN}})
	wantStatus(t, w, http.StatusForbidden)
	if _, err := LoadPIN(h.dir); err == nil {
		t.Fatal("a remote client set the PIN")
	}

	local := &client{remote: "127.0.0.1:5555"}
	wantRedirect(t, h.get(local, "/login"), "/setup")
	w = h.get(local, "/setup")
	wantStatus(t, w, http.StatusOK)
	wantBody(t, w, `id="setup"`, `name="code"`, `name="pin"`, `name="pin2"`, `type="submit"`)
	tok := formTokenIn(t, w.Body.String())

	w = h.do(local, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {code}, "pin": {testPIN}, "pin2": {"135792"}})
	wantStatus(t, w, http.StatusBadRequest)
	wantBody(t, w, catalog["setup.mismatch"].en, `value="`+code+`"`) // the right code stays filled in
	w = h.do(local, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {code}, "pin": {"12"}, "pin2": {"12"}})
	wantStatus(t, w, http.StatusBadRequest)

	w = h.do(local, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {code}, "pin": {testPIN}, "pin2": {testPIN}})
	wantRedirect(t, w, "/")
	hash, err := LoadPIN(h.dir)
	if err != nil || !VerifyPIN(hash, testPIN) {
		t.Fatalf("PIN not stored: %v", err)
	}
	// Setup signed the browser in.
	wantStatus(t, h.get(local, "/"), http.StatusOK)

	// With a PIN set, setup is closed even from this PC.
	w = h.get(&client{remote: "127.0.0.1:1"}, "/setup")
	wantStatus(t, w, http.StatusForbidden)
	other := &client{remote: "[::1]:9", cookies: []*http.Cookie{{Name: preCookie, Value: strings.Repeat("b", 43)}}}
	w = h.do(other, http.MethodPost, "/setup", url.Values{"csrf": {strings.Repeat("b", 43)}, "code": {code}, "pin": {"999999"}, "pin2": {"999999"}})
	wantStatus(t, w, http.StatusForbidden)
	if hash2, _ := LoadPIN(h.dir); hash2 != hash {
		t.Fatal("setup replaced an existing PIN")
	}
}

// setupCode makes the first-run setup code, as the agent does at start.
func (h *harness) setupCode() string {
	h.t.Helper()
	code, err := PrepareSetup(h.dir)
	if err != nil || code == "" {
		h.t.Fatalf("PrepareSetup: %q %v", code, err)
	}
	return code
}

// setupForm opens the setup form as c and returns its CSRF token.
func (h *harness) setupForm(c *client) string {
	h.t.Helper()
	w := h.get(c, "/setup")
	wantStatus(h.t, w, http.StatusOK)
	return formTokenIn(h.t, w.Body.String())
}

// TestSetupNeedsCode ensures the first PIN is set only with the one-time
// setup code (a page in the manager's browser could set it otherwise):
// none or a wrong one is refused and sets nothing; a wrong code counts
// against the client like a wrong PIN, locking it out of setup and login
// alike; the code is accepted typed with spaces or without its dash, and
// is deleted once the PIN is set.
func TestSetupNeedsCode(t *testing.T) {
	h := newHarness(t)
	code := h.setupCode()
	if !regexp.MustCompile(`^\d{4}-\d{4}$`).MatchString(code) {
		t.Fatalf("setup code %q, want 1234-5678", code)
	}
	local := &client{remote: "127.0.0.1:5555"}
	tok := h.setupForm(local)
	for _, typed := range []string{"", "0000-0000", code + "1", "x" + code} {
		if typed == "0000-0000" && code == typed {
			continue
		}
		w := h.do(local, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {typed}, "pin": {testPIN}, "pin2": {testPIN}})
		wantStatus(t, w, http.StatusUnauthorized)
		wantBody(t, w, "That setup code is not right.")
	}
	if _, err := LoadPIN(h.dir); err == nil {
		t.Fatal("a PIN was set without the setup code")
	}
	// The fifth wrong attempt locks this client out, setup and login.
	w := h.do(local, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {"9"}, "pin": {testPIN}, "pin2": {testPIN}})
	wantStatus(t, w, http.StatusTooManyRequests)
	w = h.do(local, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {code}, "pin": {testPIN}, "pin2": {testPIN}})
	wantStatus(t, w, http.StatusTooManyRequests)
	if _, err := LoadPIN(h.dir); err == nil {
		t.Fatal("a locked-out client set the PIN")
	}
	if !strings.Contains(h.log.String(), "too many wrong PINs or setup codes") {
		t.Errorf("no lockout line in the log:\n%s", h.log)
	}
	h.clock.Advance(PINFailureWindow)

	spaced := strings.ReplaceAll(code, "-", " ")
	w = h.do(local, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {" " + spaced + " "}, "pin": {testPIN}, "pin2": {testPIN}})
	wantRedirect(t, w, "/")
	if hash, err := LoadPIN(h.dir); err != nil || !VerifyPIN(hash, testPIN) {
		t.Fatalf("PIN not stored with the right code: %v", err)
	}
	if _, err := LoadSetupCode(h.dir); !errors.Is(err, ErrNoSetupCode) {
		t.Errorf("the setup code outlived the PIN it set: %v", err)
	}
	if strings.Contains(h.log.String(), code) {
		t.Errorf("the page logged the setup code:\n%s", h.log)
	}
}

// TestSetupCodeSpent ensures SetupCodeSpendLimit wrong codes in all, from
// any addresses, make the code stop working (a guesser cycling through
// loopback addresses gets no further than one that does not), and that a
// new code replaces it at once: the spent one is wrong, the new one (in
// the setup code file printgate status reads) sets the PIN.
func TestSetupCodeSpent(t *testing.T) {
	h := newHarness(t)
	code := h.setupCode()
	for i := range SetupCodeSpendLimit {
		c := &client{remote: fmt.Sprintf("127.0.0.%d:1", i+1)}
		tok := h.setupForm(c)
		w := h.do(c, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {"0"}, "pin": {testPIN}, "pin2": {testPIN}})
		wantStatus(t, w, http.StatusUnauthorized)
	}
	c := &client{remote: "127.0.0.99:1"}
	tok := h.setupForm(c)
	w := h.do(c, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {code}, "pin": {testPIN}, "pin2": {testPIN}})
	wantStatus(t, w, http.StatusUnauthorized)
	wantBody(t, w, "printgate status")
	if _, err := LoadPIN(h.dir); err == nil {
		t.Fatal("a spent setup code set the PIN")
	}
	if !strings.Contains(h.log.String(), "no longer works and a new one replaces it") {
		t.Errorf("no log line for the spent code:\n%s", h.log)
	}
	fresh, err := LoadSetupCode(h.dir)
	if err != nil || fresh == code {
		t.Fatalf("no new setup code after the old one was spent: %q, %v", fresh, err)
	}
	if !strings.Contains(h.log.String(), "first-run setup code: "+fresh) {
		t.Errorf("the new code is not logged for the console:\n%s", h.log)
	}
	w = h.do(c, http.MethodPost, "/setup", url.Values{"csrf": {tok}, "code": {fresh}, "pin": {testPIN}, "pin2": {testPIN}})
	wantStatus(t, w, http.StatusSeeOther)
	if _, err := LoadPIN(h.dir); err != nil {
		t.Fatalf("the new setup code set no PIN: %v", err)
	}
}

// TestPrepareSetup ensures the agent's start makes a fresh code readable by
// its owner only while no PIN is set, and removes a stale one once a PIN
// is set (also by printgate pin set, through SetPIN).
func TestPrepareSetup(t *testing.T) {
	dir := t.TempDir()
	a, err := PrepareSetup(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PrepareSetup(dir)
	if err != nil || a == b {
		t.Errorf("two starts made %q and %q (%v), want two codes", a, b, err)
	}
	if got, err := LoadSetupCode(dir); err != nil || got != b {
		t.Errorf("LoadSetupCode: %q %v, want %q", got, err, b)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(SetupCodePath(dir)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("setup code file: %v %v, want mode 0600", fi.Mode(), err)
		}
	}
	if err := SetPIN(dir, testPIN); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSetupCode(dir); !errors.Is(err, ErrNoSetupCode) {
		t.Errorf("after SetPIN: %v, want no setup code", err)
	}
	if err := os.WriteFile(SetupCodePath(dir), []byte("1111-1111\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, err := PrepareSetup(dir); err != nil || code != "" {
		t.Errorf("with a PIN set: %q %v, want no code", code, err)
	}
	if _, err := LoadSetupCode(dir); !errors.Is(err, ErrNoSetupCode) {
		t.Errorf("a stale setup code survived a start with a PIN set: %v", err)
	}
}

// login signs c in through the form with pin and returns the answer.
func (h *harness) login(c *client, pin string) *http.Response {
	h.t.Helper()
	w := h.get(c, "/login")
	tok := formTokenIn(h.t, w.Body.String())
	return h.do(c, http.MethodPost, "/login", url.Values{"csrf": {tok}, "pin": {pin}}).Result()
}

// TestLoginLogout ensures the PIN opens a session with a strict cookie and
// logout ends it.
func TestLoginLogout(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[tls], func(t *testing.T) {
			h := newHarness(t, func(o *Options, _ *fakeBackend) { o.TLS = tls })
			h.setPIN()
			c := &client{}
			w := h.get(c, "/login")
			wantStatus(t, w, http.StatusOK)
			wantBody(t, w, `id="login"`, `name="pin"`, `type="submit"`)

			res := h.login(c, "000000")
			if res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("wrong PIN: %d", res.StatusCode)
			}
			wantRedirect(t, h.get(c, "/"), "/login")

			res = h.login(c, testPIN)
			if res.StatusCode != http.StatusSeeOther {
				t.Fatalf("right PIN: %d", res.StatusCode)
			}
			var sc *http.Cookie
			for _, ck := range res.Cookies() {
				if ck.Name == sessionCookie {
					sc = ck
				}
			}
			if sc == nil {
				t.Fatal("no session cookie")
			}
			if !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Path != "/" || sc.Secure != tls {
				t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, Secure=%v", sc, tls)
			}
			if len(sc.Value) < 43 {
				t.Fatalf("session id %q is too short", sc.Value)
			}
			w = h.get(c, "/")
			wantStatus(t, w, http.StatusOK)
			wantBody(t, w, `id="logout"`)
			c.csrf = formTokenIn(t, w.Body.String())

			wantRedirect(t, h.post(c, "/logout", nil), "/login")
			if n := h.p.sessions.len(); n != 0 {
				t.Fatalf("%d sessions after logout", n)
			}
			// The old cookie no longer works.
			old := &client{cookies: []*http.Cookie{{Name: sessionCookie, Value: sc.Value}}}
			wantRedirect(t, h.get(old, "/"), "/login")
		})
	}
}

// TestLoginNextStaysLocal ensures the login's next cannot send the browser
// to another site.
func TestLoginNextStaysLocal(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := &client{}
	tok := formTokenIn(t, h.get(c, "/login").Body.String())
	w := h.do(c, http.MethodPost, "/login", url.Values{"csrf": {tok}, "pin": {testPIN}, "next": {"//evil.example/x"}})
	wantRedirect(t, w, "/")
	if loc := w.Header().Get("Location"); loc != "/" {
		t.Fatalf("redirected to %q", loc)
	}
	c = &client{}
	tok = formTokenIn(t, h.get(c, "/login").Body.String())
	w = h.do(c, http.MethodPost, "/login", url.Values{"csrf": {tok}, "pin": {testPIN}, "next": {"/tasks?state=HELD"}})
	if loc := w.Header().Get("Location"); loc != "/tasks?state=HELD" {
		t.Fatalf("redirected to %q", loc)
	}
}

// TestCSRF ensures every POST needs its session's token: none, a wrong one
// or another session's is 403 and the backend is not called.
func TestCSRF(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	h.f.add("T1", spool.StatePrinted, time.Now(), "")
	c := h.session()
	other := h.session()
	for _, path := range postRoutes {
		for name, tok := range map[string]string{"none": "", "wrong": randomToken(), "other session": other.csrf} {
			t.Run(path+" "+name, func(t *testing.T) {
				form := url.Values{"pin": {testPIN}}
				if tok != "" {
					form.Set("csrf", tok)
				}
				w := h.do(c, http.MethodPost, path, form)
				wantStatus(t, w, http.StatusForbidden)
			})
		}
	}
	if calls := h.f.Calls(); len(calls) != 0 {
		t.Fatalf("POSTs without the token reached the backend: %v", calls)
	}
	if h.p.sessions.len() != 2 {
		t.Fatal("a logout without the token ended the session")
	}
	// The header works as well as the field.
	c.header = http.Header{"X-Csrf-Token": {c.csrf}}
	w := h.do(c, http.MethodPost, "/tasks/T1/reprint", url.Values{})
	wantRedirect(t, w, "/tasks/")
	// The login and setup forms need their own token.
	w = h.do(&client{}, http.MethodPost, "/login", url.Values{"pin": {testPIN}})
	wantStatus(t, w, http.StatusForbidden)
	pre := &client{cookies: []*http.Cookie{{Name: preCookie, Value: randomToken()}}}
	w = h.do(pre, http.MethodPost, "/login", url.Values{"pin": {testPIN}, "csrf": {randomToken()}})
	wantStatus(t, w, http.StatusForbidden)
}

// TestLockout ensures five wrong PINs within a minute lock the client out,
// even with the right PIN, until the lockout ends; other clients are not
// affected.
func TestLockout(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := &client{remote: "192.0.2.20:1000"}
	for i := 1; i <= PINFailureLimit; i++ {
		h.clock.Advance(5 * time.Second)
		res := h.login(c, "111111")
		want := http.StatusUnauthorized
		if i == PINFailureLimit {
			want = http.StatusTooManyRequests
		}
		if res.StatusCode != want {
			t.Fatalf("attempt %d: %d, want %d", i, res.StatusCode, want)
		}
	}
	res := h.login(c, testPIN)
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right PIN while locked out: %d", res.StatusCode)
	}
	w := h.get(c, "/login")
	wantStatus(t, w, http.StatusTooManyRequests)
	wantBody(t, w, "Try again in 60 seconds")
	// Another address still signs in.
	if res := h.login(&client{remote: "192.0.2.21:1000"}, testPIN); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("other client: %d", res.StatusCode)
	}
	h.clock.Advance(PINFailureWindow)
	if res := h.login(c, testPIN); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the lockout: %d", res.StatusCode)
	}
	if !strings.Contains(h.log.String(), "too many wrong PINs") {
		t.Fatalf("lockout not logged:\n%s", h.log.String())
	}
}

// TestLockoutWindow ensures wrong PINs spread over more than a minute do
// not lock anyone out.
func TestLockoutWindow(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := &client{remote: "192.0.2.30:1"}
	for i := 0; i < 2*PINFailureLimit; i++ {
		if res := h.login(c, "111111"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i, res.StatusCode)
		}
		h.clock.Advance(PINFailureWindow/(PINFailureLimit-1) + time.Second)
	}
}

// TestBearerTokenIsNotALogin ensures the API's token opens no page, the
// API gets its requests untouched, and neither the token nor the PIN
// appears in a page or a log line.
func TestBearerTokenIsNotALogin(t *testing.T) {
	const token = "tok-0123456789abcdef01234"
	var apiSaw []string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiSaw = append(apiSaw, r.URL.Path+" "+r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	h := newHarness(t, func(o *Options, _ *fakeBackend) { o.API = api })
	h.setPIN()
	h.f.add("T1", spool.StatePrinted, time.Now(), `{"lines":[]}`)
	bearer := &client{header: http.Header{"Authorization": {"Bearer " + token}}}
	for _, path := range pageRoutes {
		wantRedirect(t, h.get(bearer, path), "/login")
	}
	for _, path := range streamRoutes {
		wantStatus(t, h.get(bearer, path), http.StatusUnauthorized)
	}
	w := h.get(bearer, "/api/v1/tasks")
	wantStatus(t, w, http.StatusOK)
	if w.Header().Get("Content-Security-Policy") != "" {
		t.Fatal("the page's headers were added to an API answer")
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		h.get(anon(), path)
	}
	if len(apiSaw) != 3 || apiSaw[0] != "/api/v1/tasks Bearer "+token || !strings.HasPrefix(apiSaw[1], "/healthz") {
		t.Fatalf("API saw %q", apiSaw)
	}
	// A page session does not open the API.
	c := h.session()
	wantStatus(t, h.get(c, "/api/v1/tasks"), http.StatusUnauthorized)

	// Sign in with the PIN, fail once, then read every page: neither
	// secret shows anywhere.
	h.login(&client{}, "999999")
	browser := &client{}
	h.login(browser, testPIN)
	browser.header = http.Header{"Authorization": {"Bearer " + token}}
	var bodies strings.Builder
	for _, path := range pageRoutes {
		w := h.get(browser, path)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, w.Code)
		}
		bodies.WriteString(w.Body.String())
	}
	hash, _ := LoadPIN(h.dir)
	for name, secret := range map[string]string{"token": token, "PIN": testPIN, "PIN hash": hash} {
		if strings.Contains(bodies.String(), secret) {
			t.Errorf("a page shows the %s", name)
		}
		if strings.Contains(h.log.String(), secret) {
			t.Errorf("the log shows the %s:\n%s", name, h.log.String())
		}
	}
	if !strings.Contains(h.log.String(), "wrong PIN") {
		t.Fatalf("the log capture missed the login records:\n%s", h.log.String())
	}
}

var (
	inlineStyle  = regexp.MustCompile(`(?i)\sstyle\s*=`)
	inlineScript = regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]`)
	scriptTag    = regexp.MustCompile(`(?i)<script[^>]*>`)
	inlineEvent  = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
)

// TestSecurityHeaders ensures every page carries the CSP and the other
// headers, and holds nothing the CSP would block.
func TestSecurityHeaders(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	h.f.add("T1", spool.StatePrinted, time.Now(), "")
	c := h.session()
	paths := append([]string{"/login", "/nowhere", "/static/app.css"}, pageRoutes...)
	for _, path := range paths {
		w := h.get(c, path)
		if path == "/login" {
			w = h.get(anon(), path)
		}
		hd := w.Header()
		csp := hd.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "img-src 'self' data:", "style-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP allows inline code", path)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if hd.Get(k) != v {
				t.Errorf("%s: %s = %q, want %q", path, k, hd.Get(k), v)
			}
		}
		if !strings.HasPrefix(path, "/static/") && hd.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q", path, hd.Get("Cache-Control"))
		}
		body := w.Body.String()
		if inlineStyle.MatchString(body) || inlineScript.MatchString(body) || inlineEvent.MatchString(body) {
			t.Errorf("%s: inline style or script the CSP blocks:\n%s", path, body)
		}
		for _, tag := range scriptTag.FindAllString(body, -1) {
			if !strings.Contains(tag, `src="/static/`) {
				t.Errorf("%s: script %s is not from /static/", path, tag)
			}
		}
	}
}

// TestSessionExpiry ensures sessions end after 12 idle hours or 7 days in
// all, and the store holds a bounded number.
func TestSessionExpiry(t *testing.T) {
	h := newHarness(t)
	c := h.session()
	h.clock.Advance(sessionIdle - time.Minute)
	wantStatus(t, h.get(c, "/logs"), http.StatusOK)
	h.clock.Advance(sessionIdle)
	wantRedirect(t, h.get(c, "/logs"), "/login")

	c = h.session()
	for range 14 {
		h.clock.Advance(sessionIdle - time.Hour)
		wantStatus(t, h.get(c, "/logs"), http.StatusOK)
	}
	h.clock.Advance(sessionMax - 14*(sessionIdle-time.Hour))
	wantRedirect(t, h.get(c, "/logs"), "/login")

	for range maxSessions + 20 {
		h.p.sessions.create()
	}
	if n := h.p.sessions.len(); n != maxSessions {
		t.Fatalf("%d sessions, max %d", n, maxSessions)
	}
}

// TestSetPINCreatesPrivateDir ensures SetPIN creates a missing data dir
// readable by the agent's user only (on Unix; Windows has no mode bits).
func TestSetPINCreatesPrivateDir(t *testing.T) {
	dir := t.TempDir() + "/data"
	if err := SetPIN(dir, testPIN); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("data dir mode %v", st.Mode())
	}
}
