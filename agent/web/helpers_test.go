package web

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"printgate/agent/api"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// syncBuffer is a log sink safe for the page's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is a page over a fake backend, with a fake clock and a captured
// log.
type harness struct {
	t     *testing.T
	p     *Page
	f     *fakeBackend
	clock *fakeClock
	log   *syncBuffer
	dir   string
}

const testPIN = "246813"

func newHarness(t *testing.T, mod ...func(*Options, *fakeBackend)) *harness {
	t.Helper()
	return newHarnessOver(t, nil, mod...)
}

// newHarnessOver is newHarness with the page over wrap(fake) instead of
// the fake itself (a backend with more methods); nil wrap is the fake.
func newHarnessOver(t *testing.T, wrap func(*fakeBackend) Backend, mod ...func(*Options, *fakeBackend)) *harness {
	t.Helper()
	h := &harness{t: t, f: newFake(), clock: newClock(), log: &syncBuffer{}, dir: t.TempDir()}
	opts := Options{
		DataDir: h.dir,
		Logger:  slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:     h.clock.Now,
		Version: "test",
	}
	for _, m := range mod {
		m(&opts, h.f)
	}
	var b Backend = h.f
	if wrap != nil {
		b = wrap(h.f)
	}
	h.p = New(b, opts)
	t.Cleanup(func() { h.p.Close() })
	return h
}

// setPIN stores the test PIN.
func (h *harness) setPIN() {
	h.t.Helper()
	if err := SetPIN(h.dir, testPIN); err != nil {
		h.t.Fatal(err)
	}
}

// client is a browser: a session cookie, its CSRF token, a remote address
// and an Accept-Language.
type client struct {
	cookies []*http.Cookie
	csrf    string
	remote  string
	lang    string
	header  http.Header
}

// session signs a client in without the PIN (argon2id is slow; the PIN
// login has its own tests).
func (h *harness) session() *client {
	sess, id := h.p.sessions.create()
	return &client{cookies: []*http.Cookie{{Name: sessionCookie, Value: id}}, csrf: sess.csrf}
}

func anon() *client { return &client{} }

// do sends a request from c; form (if not nil) is the POST body.
func (h *harness) do(c *client, method, path string, form url.Values) *httptest.ResponseRecorder {
	h.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, path, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.remote != "" {
		r.RemoteAddr = c.remote
	}
	if c.lang != "" {
		r.Header.Set("Accept-Language", c.lang)
	}
	for k, v := range c.header {
		r.Header[k] = v
	}
	for _, ck := range c.cookies {
		r.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	h.p.ServeHTTP(w, r)
	// Keep cookies the response set, like a browser.
	for _, set := range w.Result().Cookies() {
		kept := c.cookies[:0]
		for _, ck := range c.cookies {
			if ck.Name != set.Name {
				kept = append(kept, ck)
			}
		}
		c.cookies = kept
		if set.MaxAge >= 0 {
			c.cookies = append(c.cookies, &http.Cookie{Name: set.Name, Value: set.Value})
		}
	}
	return w
}

// get and post are do for the common cases; post adds c's CSRF token.
func (h *harness) get(c *client, path string) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.do(c, http.MethodGet, path, nil)
}

func (h *harness) post(c *client, path string, form url.Values) *httptest.ResponseRecorder {
	h.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if c.csrf != "" && form.Get("csrf") == "" {
		form.Set("csrf", c.csrf)
	}
	return h.do(c, http.MethodPost, path, form)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// formToken reads the CSRF token of the form in body.
func formTokenIn(t *testing.T, body string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf field in:\n%s", body)
	}
	return m[1]
}

func wantStatus(t *testing.T, w *httptest.ResponseRecorder, code int) {
	t.Helper()
	if w.Code != code {
		t.Fatalf("status %d, want %d; body:\n%s", w.Code, code, w.Body.String())
	}
}

func wantRedirect(t *testing.T, w *httptest.ResponseRecorder, prefix string) {
	t.Helper()
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), prefix) {
		t.Fatalf("answer %d Location %q, want 303 to %s…; body:\n%s", w.Code, w.Header().Get("Location"), prefix, w.Body.String())
	}
}

func wantBody(t *testing.T, w *httptest.ResponseRecorder, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(w.Body.String(), s) {
			t.Fatalf("body lacks %q:\n%s", s, w.Body.String())
		}
	}
}

// waitSubscribed waits until the page follows the backend's changes, and
// its first scan of the state is done (a change sent now comes back
// through the hub only after it).
func (h *harness) waitSubscribed() {
	h.t.Helper()
	select {
	case <-h.f.subscribed:
	case <-time.After(5 * time.Second):
		h.t.Fatal("the page never subscribed to changes")
	}
	h.emitAndWait(api.Change{Kind: "sync"})
}

// emitAndWait sends c from the backend and waits until the page has
// applied it (the page publishes a change to its streams after updating
// the alerts).
func (h *harness) emitAndWait(c api.Change) {
	h.t.Helper()
	ch := h.p.hub.subscribe()
	defer h.p.hub.unsubscribe(ch)
	h.f.emit(c)
	timeout := time.After(5 * time.Second)
	for {
		select {
		case got := <-ch:
			if got == c {
				return
			}
		case <-timeout:
			h.t.Fatalf("change %+v never reached the page", c)
		}
	}
}
