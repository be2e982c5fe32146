package fleet_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/sync/pair"
	"printgate/sync/wire"
)

// TestSignIn ensures the page asks an anonymous browser to sign in, takes
// a user's right password only, and gives a session cookie that is
// HttpOnly, SameSite=Strict and limited to the page; the session shows the
// user's tenant's stores, and signing out ends it.
func TestSignIn(t *testing.T) {
	r := startHub(t)
	c := r.client(t, "127.0.0.1")
	if status, h, _ := c.do("GET", "/fleet/", nil, nil); status != 303 || h.Get("Location") != "/fleet/login?next=%2Ffleet%2F" {
		t.Fatalf("anonymous /fleet/: %d → %q, want 303 to the sign-in", status, h.Get("Location"))
	}
	if status, _, body := c.login("acme", "ana", "wrong-password"); status != 401 || !strings.Contains(body, "Wrong company, user name or password") {
		t.Fatalf("wrong password: %d\n%s", status, body)
	}
	if status, _, _ := c.login("other", "ana", anaPW); status != 401 {
		t.Fatalf("ana's password in another tenant: %d, want 401", status)
	}
	status, h, _ := c.login("acme", "ana", anaPW)
	if status != 303 {
		t.Fatalf("right password: %d", status)
	}
	var cookie string
	for _, v := range h.Values("Set-Cookie") {
		if strings.HasPrefix(v, "printgate_hub_session=") && !strings.HasPrefix(v, "printgate_hub_session=;") {
			cookie = v
		}
	}
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/fleet/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("session cookie %q is Secure on a plain HTTP hub (the browser would never send it back)", cookie)
	}
	status, _, body := c.do("GET", "/fleet/", nil, nil)
	if status != 200 || !strings.Contains(body, `id="store-s1"`) || !strings.Contains(body, `id="store-s2"`) || !strings.Contains(body, "Store 1") {
		t.Fatalf("fleet page: %d\n%s", status, body)
	}
	if strings.Contains(body, "o1") || strings.Contains(body, "Other 1") {
		t.Errorf("acme's fleet page shows the other tenant's store:\n%s", body)
	}
	tok := csrfRe.FindStringSubmatch(body)[1]
	if status, h, _ := c.do("POST", "/fleet/logout", url.Values{"csrf": {tok}}, nil); status != 303 || h.Get("Location") != "/fleet/login" {
		t.Fatalf("sign out: %d %q", status, h.Get("Location"))
	}
	if status, _, _ := c.do("GET", "/fleet/fragment", nil, nil); status != 401 {
		t.Fatalf("after signing out the fragment is %d, want 401", status)
	}
}

// TestCSRFRefused ensures a POST without the form's token does nothing:
// the sign-in without its form cookie's token, and a signed-in user's
// pairing decision and reprint without the session's token are 403.
func TestCSRFRefused(t *testing.T) {
	r := startHub(t)
	c := r.client(t, "127.0.0.1")
	if status, _, _ := c.do("POST", "/fleet/login", url.Values{"tenant": {"acme"}, "name": {"ana"}, "password": {anaPW}}, nil); status != 403 {
		t.Fatalf("sign-in without the form cookie and token: %d, want 403", status)
	}
	c.csrf("/fleet/login") // the form's cookie is set now
	for _, tok := range []string{"", "not-the-token"} {
		if status, _, _ := c.do("POST", "/fleet/login", url.Values{"csrf": {tok}, "tenant": {"acme"}, "name": {"ana"}, "password": {anaPW}}, nil); status != 403 {
			t.Fatalf("sign-in with the form cookie and csrf %q: %d, want 403", tok, status)
		}
	}
	c.mustLogin("acme", "ana", anaPW)
	dc := startPairing(t, r)
	for _, form := range []url.Values{
		{"code": {dc.UserCode}, "store": {"s1"}, "decision": {"approve"}},
		{"csrf": {"not-the-token"}, "code": {dc.UserCode}, "store": {"s1"}, "decision": {"approve"}},
	} {
		if status, _, body := c.do("POST", "/fleet/pair", form, nil); status != 403 || !strings.Contains(body, "nothing was done") {
			t.Errorf("approval with csrf %q: %d, want 403\n%s", form.Get("csrf"), status, body)
		}
	}
	if status, _, _ := c.do("POST", "/fleet/stores/s1/jobs/X-1/reprint", url.Values{"id": {"fleet-x"}}, nil); status != 403 {
		t.Errorf("reprint without the token: %d, want 403", status)
	}
	// The code was not decided: the page's own form decides it now.
	approve(t, c, dc.UserCode, "s1")
}

// TestHostRefused ensures a request for a name the hub does not answer for
// (DNS rebinding) is 421 and a POST a page of another site sent through a
// browser is 403, before any session or form is looked at.
func TestHostRefused(t *testing.T) {
	r := startHub(t)
	c := r.client(t, "127.0.0.1")
	status, _, body := c.do("GET", "/fleet/login", nil, map[string]string{"Host": "evil.example:80"})
	if status != http.StatusMisdirectedRequest || !strings.Contains(body, "allowed_hosts") {
		t.Fatalf("Host evil.example: %d\n%s", status, body)
	}
	c.mustLogin("acme", "ana", anaPW)
	tok := c.csrf("/fleet/pair")
	status, _, _ = c.do("POST", "/fleet/pair", url.Values{"csrf": {tok}, "code": {"BCDF-GHJK"}, "store": {"s1"}, "decision": {"approve"}},
		map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
	if status != 403 {
		t.Fatalf("cross-site POST: %d, want 403", status)
	}
	if status, _, _ := c.do("GET", "/fleet/login", nil, map[string]string{"Host": "localhost"}); status != 200 {
		t.Fatalf("Host localhost: %d, want 200", status)
	}
}

var retryAfter = regexp.MustCompile(`^[1-9][0-9]*$`)

// TestWrongPasswordThrottle ensures wrong passwords are held up per
// address and per user: after ten wrong ones from one address, that
// address gets 429 with Retry-After (the right password too); the user
// they were aimed at gets 429 from another address as well, while another
// user signs in from there.
func TestWrongPasswordThrottle(t *testing.T) {
	r := startHub(t)
	c := r.client(t, "127.0.0.1")
	for i := 1; i <= 10; i++ {
		if status, _, _ := c.login("acme", "ana", "guess-number-"+string(rune('a'+i))); status != 401 {
			t.Fatalf("wrong password %d: %d, want 401", i, status)
		}
	}
	status, h, body := c.login("acme", "ana", anaPW)
	if status != http.StatusTooManyRequests || !retryAfter.MatchString(h.Get("Retry-After")) || !strings.Contains(body, "Too many wrong passwords") {
		t.Fatalf("after ten wrong passwords the right one is %d (Retry-After %q)\n%s", status, h.Get("Retry-After"), body)
	}
	if status, _, _ := c.login("acme", "bob", bobPW); status != http.StatusTooManyRequests {
		t.Fatalf("another user from the held address: %d, want 429", status)
	}
	d := r.client(t, "127.0.0.2")
	if status, h, _ := d.login("acme", "ana", anaPW); status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("the held user from another address: %d, want 429 with Retry-After", status)
	}
	d.mustLogin("acme", "bob", bobPW)
}

// TestTenantIsolation ensures a user of tenant acme reaches nothing of
// tenant other: its store's job page, a reprint of its job and an approval
// for its store are the same 404 as for what does not exist, and the
// pairing code stays undecided.
func TestTenantIsolation(t *testing.T) {
	r := startHub(t)
	olga := r.client(t, "127.0.0.1")
	olga.mustLogin("other", "olga", olgaPW)
	if status, _, body := olga.do("GET", "/fleet/stores/o1/jobs/O-1", nil, nil); status != 200 || !strings.Contains(body, "O-1") {
		t.Fatalf("olga's own job: %d\n%s", status, body)
	}
	ana := r.client(t, "127.0.0.2")
	ana.mustLogin("acme", "ana", anaPW)
	// The pages differ only in their language links, which name the page.
	back := regexp.MustCompile(`back=[^"]*`)
	_, _, missing := ana.do("GET", "/fleet/stores/s1/jobs/NOPE", nil, nil)
	for _, path := range []string{"/fleet/stores/o1/jobs/O-1", "/fleet/stores/s1/jobs/NOPE", "/fleet/stores/zz/jobs/O-1"} {
		status, _, body := ana.do("GET", path, nil, nil)
		if status != 404 || back.ReplaceAllString(body, "") != back.ReplaceAllString(missing, "") {
			t.Errorf("GET %s: %d; want the 404 of a job that does not exist", path, status)
		}
	}
	tok := ana.csrf("/fleet/pair")
	if status, _, _ := ana.do("POST", "/fleet/stores/o1/jobs/O-1/reprint", url.Values{"csrf": {tok}, "id": {"fleet-iso-1"}}, nil); status != 404 {
		t.Errorf("reprint of the other tenant's job: %d, want 404", status)
	}
	dc := startPairing(t, r)
	status, _, body := ana.do("POST", "/fleet/pair", url.Values{"csrf": {tok}, "code": {dc.UserCode}, "store": {"o1"}, "decision": {"approve"}}, nil)
	if status != 404 || strings.Contains(body, "Other 1") {
		t.Fatalf("approval for the other tenant's store: %d, want 404\n%s", status, body)
	}
	// The code was not decided: ana approves it for her own store now.
	approve(t, ana, dc.UserCode, "s1")
	for _, path := range []string{"/fleet/", "/fleet/fragment", "/fleet/pair"} {
		if _, _, body := ana.do("GET", path, nil, nil); strings.Contains(body, "o1") || strings.Contains(body, "O-1") || strings.Contains(body, "Other 1") {
			t.Errorf("%s shows acme's user the other tenant's store or job:\n%s", path, body)
		}
	}
}

// TestApproveThroughPage ensures an agent's pairing succeeds through the
// page: the device flow's verification_uri_complete is the approval page
// with the code, a signed-in user approves it for store s2, and the
// agent's own pairing code (sync/pair) gets a device token that opens the
// websocket as s2's agent.
func TestApproveThroughPage(t *testing.T) {
	r := startHub(t)
	dc := startPairing(t, r)
	if want := r.base + "/fleet/pair?user_code=" + dc.UserCode; dc.URL() != want {
		t.Fatalf("the QR's URL is %q, want %q", dc.URL(), want)
	}
	c := r.client(t, "127.0.0.1")
	path := strings.TrimPrefix(dc.URL(), r.base)
	status, h, _ := c.do("GET", path, nil, nil)
	if status != 303 || h.Get("Location") != "/fleet/login?next="+url.QueryEscape(path) {
		t.Fatalf("the QR's page anonymous: %d → %q", status, h.Get("Location"))
	}
	tok := c.csrf("/fleet/login")
	if status, h, _ := c.do("POST", "/fleet/login", url.Values{"csrf": {tok}, "tenant": {"acme"}, "name": {"ana"}, "password": {anaPW}, "next": {path}}, nil); status != 303 || h.Get("Location") != path {
		t.Fatalf("sign-in from the QR: %d → %q, want back to %q", status, h.Get("Location"), path)
	}
	status, _, body := c.do("GET", path, nil, nil)
	if status != 200 || !strings.Contains(body, `value="`+dc.UserCode+`"`) || !strings.Contains(body, `<option value="s2">`) {
		t.Fatalf("approval page: %d\n%s", status, body)
	}
	tok = csrfRe.FindStringSubmatch(body)[1]
	status, h, _ = c.do("POST", "/fleet/pair", url.Values{"csrf": {tok}, "code": {strings.ToLower(dc.UserCode)}, "store": {"s2"}, "decision": {"approve"}}, nil)
	if status != 303 || h.Get("Location") != "/fleet/" {
		t.Fatalf("approve: %d → %q", status, h.Get("Location"))
	}
	if _, _, body := c.do("GET", "/fleet/", nil, nil); !strings.Contains(body, "Code "+dc.UserCode+" approved for s2") {
		t.Errorf("no word of the approval on the fleet page:\n%s", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	token, err := dc.Wait(ctx)
	if err != nil {
		t.Fatalf("the agent's pairing: %v", err)
	}
	r.tokens["paired"] = token
	a := r.connect(t, "paired")
	_ = a
	// A second decision of the same code is refused with its reason.
	status, _, body = c.do("POST", "/fleet/pair", url.Values{"csrf": {tok}, "code": {dc.UserCode}, "store": {"s1"}, "decision": {"deny"}}, nil)
	if status != 409 || !strings.Contains(body, "already approved, refused or used") {
		t.Errorf("deciding the used code again: %d\n%s", status, body)
	}
}

// TestFleetShowsStoresAndJobs ensures the fleet shows a connected store
// online with its printers and a timed-out job in red with its timeline,
// and that the job page's reprint reaches the store's agent as a reprint
// command under the page's id, sent again under the same id when the form
// is resent.
func TestFleetShowsStoresAndJobs(t *testing.T) {
	r := startHub(t)
	a := r.connect(t, "s1")
	a.timedOut(t, "T-1")
	c := r.client(t, "127.0.0.1")
	c.mustLogin("acme", "ana", anaPW)
	_, _, body := c.do("GET", "/fleet/fragment", nil, nil)
	for _, want := range []string{`data-store="s1" data-online="true"`, `data-store="s2" data-online="false"`, `<li class="job red" data-task="T-1" data-state="TIMED_OUT">`,
		"Timed out: not printed", "Out of paper", "9.9.9"} {
		if !strings.Contains(body, want) {
			t.Errorf("the fleet lacks %q:\n%s", want, body)
		}
	}
	status, _, body := c.do("GET", "/fleet/stores/s1/jobs/T-1", nil, nil)
	if status != 200 || !strings.Contains(body, `class="badge bad" data-state="TIMED_OUT"`) || strings.Count(body, "<tr") != 3 {
		t.Fatalf("job page: %d\n%s", status, body)
	}
	tok := csrfRe.FindStringSubmatch(body)[1]
	id := regexp.MustCompile(`name="id" value="([^"]+-r)"`).FindStringSubmatch(body)[1]
	for range 2 {
		status, h, _ := c.do("POST", "/fleet/stores/s1/jobs/T-1/reprint", url.Values{"csrf": {tok}, "id": {id}}, nil)
		if status != 303 || h.Get("Location") != "/fleet/stores/s1/jobs/T-1" {
			t.Fatalf("reprint: %d → %q", status, h.Get("Location"))
		}
		m := a.next(t, func(m wire.Message) bool { _, ok := m.(*wire.Reprint); return ok }).(*wire.Reprint)
		if m.ID != id || m.TaskNo != "T-1" {
			t.Fatalf("the agent got reprint %+v, want id %s of T-1", m, id)
		}
	}
	if _, _, body := c.do("GET", "/fleet/stores/s1/jobs/T-1", nil, nil); !strings.Contains(body, "Reprint sent to the store&#39;s agent") {
		t.Errorf("no word of the reprint:\n%s", body)
	}
}

// startPairing starts the agent's side of the device flow against the
// hub, as `printgate pair` does.
func startPairing(t *testing.T, r *rig) *pair.Pending {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := pair.Start(ctx, r.base+"/oauth", http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// approve approves code for store with c's session, through the page's
// form, and fails the test unless the page took it (a code decided before
// is 409).
func approve(t *testing.T, c *client, code, store string) {
	t.Helper()
	tok := c.csrf("/fleet/pair")
	if status, h, body := c.do("POST", "/fleet/pair", url.Values{"csrf": {tok}, "code": {code}, "store": {store}, "decision": {"approve"}}, nil); status != 303 || h.Get("Location") != "/fleet/" {
		t.Fatalf("approve %s for %s: %d\n%s", code, store, status, body)
	}
}
