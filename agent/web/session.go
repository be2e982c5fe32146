package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Session limits. Sessions live in memory only: a restart signs everyone
// out, which is fine for a page opened when something went wrong.
const (
	sessionCookie = "printgate_session"
	// preCookie carries the CSRF token of the login and setup forms,
	// which are posted before there is a session (double submit).
	preCookie = "printgate_form"
	// maxSessions bounds the sessions held; the least recently used
	// is dropped to make room.
	maxSessions = 128
	// sessionIdle ends a session nobody used for this long.
	sessionIdle = 12 * time.Hour
	// sessionMax ends any session this long after login.
	sessionMax = 7 * 24 * time.Hour
)

// session is one signed-in browser.
type session struct {
	key     [sha256.Size]byte // SHA-256 of the cookie's id
	csrf    string
	created time.Time
	seen    time.Time
	flash   *flash
}

// flash is a one-shot message shown on the next page the session opens.
type flash struct {
	Error bool
	Text  string
	// Link and LinkText, when set, point at what the action made (the
	// new task).
	Link     string
	LinkText string
	// Lines, when set, follow Text one per line: what a config reload
	// changed, or the config's errors ("file:line: msg").
	Lines []string
}

// sessionStore holds the sessions by the hash of their id, so neither a
// map lookup's timing nor a memory dump gives an id away.
type sessionStore struct {
	now       func() time.Time
	max       int
	idle, abs time.Duration

	mu sync.Mutex
	m  map[[sha256.Size]byte]*session
}

func newSessionStore(now func() time.Time, max int, idle, abs time.Duration) *sessionStore {
	return &sessionStore{now: now, max: max, idle: idle, abs: abs, m: make(map[[sha256.Size]byte]*session)}
}

// randomToken returns 32 random bytes, base64url without padding.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session and returns it with the id for the cookie.
func (s *sessionStore) create() (*session, string) {
	id := randomToken()
	now := s.now()
	sess := &session{key: sha256.Sum256([]byte(id)), csrf: randomToken(), created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		s.dropExpired(now)
	}
	for len(s.m) >= s.max {
		var oldest *session
		for _, o := range s.m {
			if oldest == nil || o.seen.Before(oldest.seen) {
				oldest = o
			}
		}
		delete(s.m, oldest.key)
	}
	s.m[sess.key] = sess
	return sess, id
}

func (s *sessionStore) expired(sess *session, now time.Time) bool {
	return !now.Before(sess.seen.Add(s.idle)) || !now.Before(sess.created.Add(s.abs))
}

func (s *sessionStore) dropExpired(now time.Time) {
	for k, o := range s.m {
		if s.expired(o, now) {
			delete(s.m, k)
		}
	}
}

// get returns r's live session, touching it, or nil. Only the session
// cookie counts: an Authorization header (the API's token) is ignored.
func (s *sessionStore) get(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	key := sha256.Sum256([]byte(c.Value))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[key]
	if !ok {
		return nil
	}
	if s.expired(sess, now) {
		delete(s.m, key)
		return nil
	}
	sess.seen = now
	return sess
}

// remove ends sess.
func (s *sessionStore) remove(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sess.key)
}

// len is how many sessions are held (for tests).
func (s *sessionStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// setFlash stores the message the session's next page shows.
func (s *sessionStore) setFlash(sess *session, f *flash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.flash = f
}

// takeFlash returns and clears the session's flash.
func (s *sessionStore) takeFlash(sess *session) *flash {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := sess.flash
	sess.flash = nil
	return f
}

// csrfFrom returns the CSRF token r presents: the X-CSRF-Token header or
// the form field csrf (from the body only, never the URL).
func csrfFrom(r *http.Request) string {
	if h := r.Header.Get("X-CSRF-Token"); h != "" {
		return h
	}
	return r.PostFormValue("csrf")
}

// tokensEqual compares two tokens in constant time; empty never matches.
func tokensEqual(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// setSessionCookie gives the browser its session id.
func (p *Page) setSessionCookie(w http.ResponseWriter, id string) {
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    id,
		Path:     "/",
		MaxAge:   int(sessionMax / time.Second),
		HttpOnly: true,
		Secure:   p.opts.TLS,
		SameSite: http.SameSiteStrictMode,
	})
}

func (p *Page) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: p.opts.TLS, SameSite: http.SameSiteStrictMode,
	})
}

// formToken returns the CSRF token of a login or setup form: the one in
// r's form cookie, or a new one set on w.
func (p *Page) formToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(preCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	tok := randomToken()
	http.SetCookie(w, &http.Cookie{
		Name: preCookie, Value: tok, Path: "/", HttpOnly: true,
		Secure: p.opts.TLS, SameSite: http.SameSiteStrictMode,
	})
	return tok
}

// checkFormToken reports whether a login or setup POST carries the token
// of its form cookie.
func checkFormToken(r *http.Request) bool {
	c, err := r.Cookie(preCookie)
	if err != nil {
		return false
	}
	return tokensEqual(csrfFrom(r), c.Value)
}

// page wraps a page handler: anonymous requests are redirected to the
// login page.
func (p *Page) page(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := p.sessions.get(r)
		if sess == nil {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, sess)
	}
}

// stream wraps an event-stream or fragment handler: anonymous requests get
// 401, since a script, not a person, reads the answer.
func (p *Page) stream(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := p.sessions.get(r)
		if sess == nil {
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		h(w, r, sess)
	}
}

// action wraps a POST handler: anonymous requests are redirected to the
// login page and requests without the session's CSRF token are refused
// with 403 before the handler runs.
func (p *Page) action(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		sess := p.sessions.get(r)
		if sess == nil {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if !tokensEqual(csrfFrom(r), sess.csrf) {
			p.csrfRefused(w, r)
			return
		}
		h(w, r, sess)
	}
}

func (p *Page) csrfRefused(w http.ResponseWriter, r *http.Request) {
	l := pickLang(r)
	p.showMessage(w, r, http.StatusForbidden, l.T("common.error"), message{Body: l.T("csrf.refused"), Error: true})
}

// flashTo stores f in sess and sends the browser to path (303), where the
// flash is shown once.
func (p *Page) flashTo(w http.ResponseWriter, r *http.Request, sess *session, path string, f *flash) {
	p.sessions.setFlash(sess, f)
	http.Redirect(w, r, path, http.StatusSeeOther)
}
