package fleet

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

// Session limits. Sessions live in this node's memory only: a restart
// signs everyone out, and a user removed with `user remove` (on a stopped
// hub) has no session left.
const (
	sessionCookie = "printgate_hub_session"
	// preCookie carries the CSRF token of the sign-in form, posted before
	// there is a session (double submit).
	preCookie = "printgate_hub_form"
	// maxSessions bounds the sessions held; the least recently used is
	// dropped to make room.
	maxSessions = 512
	// sessionIdle ends a session nobody used for this long.
	sessionIdle = 12 * time.Hour
	// sessionMax ends any session this long after sign-in.
	sessionMax = 7 * 24 * time.Hour
)

// session is one signed-in browser of a tenant's user.
type session struct {
	key     [sha256.Size]byte // SHA-256 of the cookie's id
	tenant  string
	user    string
	csrf    string
	created time.Time
	seen    time.Time
	flash   *flash
}

// flash is a one-shot message shown on the next page the session opens.
type flash struct {
	Error bool
	Text  string
}

// sessionStore holds the sessions by the hash of their id.
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

// create starts a session of the user and returns it with the cookie's id.
func (s *sessionStore) create(tenant, user string) (*session, string) {
	id := randomToken()
	now := s.now()
	sess := &session{key: sha256.Sum256([]byte(id)), tenant: tenant, user: user, csrf: randomToken(), created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		for k, o := range s.m {
			if s.expired(o, now) {
				delete(s.m, k)
			}
		}
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

// get returns r's live session, touching it, or nil.
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

func (s *sessionStore) remove(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sess.key)
}

func (s *sessionStore) setFlash(sess *session, f *flash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.flash = f
}

func (s *sessionStore) takeFlash(sess *session) *flash {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := sess.flash
	sess.flash = nil
	return f
}

// tokensEqual compares two tokens in constant time; empty never matches.
func tokensEqual(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (p *Page) setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Prefix + "/", MaxAge: maxAge,
		HttpOnly: true, Secure: p.opts.TLS, SameSite: http.SameSiteStrictMode})
}

// formToken returns the CSRF token of the sign-in form: the one in r's
// form cookie, or a new one set on w.
func (p *Page) formToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(preCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	tok := randomToken()
	p.setCookie(w, preCookie, tok, 0)
	return tok
}

// page wraps a page handler: an anonymous browser is sent to sign in,
// and back here after.
func (p *Page) page(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := p.sessions.get(r)
		if sess == nil {
			http.Redirect(w, r, Prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, sess)
	}
}

// script wraps a handler a script reads: anonymous is 401.
func (p *Page) script(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := p.sessions.get(r)
		if sess == nil {
			plain(w, http.StatusUnauthorized, "sign in first")
			return
		}
		h(w, r, sess)
	}
}

// action wraps a POST handler: anonymous is sent to sign in, and a POST
// without the session's CSRF token is refused 403 before the handler runs.
func (p *Page) action(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		sess := p.sessions.get(r)
		if sess == nil {
			http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
			return
		}
		if !tokensEqual(r.PostFormValue("csrf"), sess.csrf) {
			p.csrfRefused(w, r, sess)
			return
		}
		h(w, r, sess)
	}
}

func (p *Page) csrfRefused(w http.ResponseWriter, r *http.Request, sess *session) {
	l := pickLang(r)
	p.showMessage(w, r, sess, http.StatusForbidden, l.T("error.title"), message{Body: l.T("csrf.refused"), Error: true, Link: Prefix + "/", LinkText: l.T("nav.fleet")})
}

// flashTo stores f in sess and sends the browser to path (303).
func (p *Page) flashTo(w http.ResponseWriter, r *http.Request, sess *session, path string, f *flash) {
	p.sessions.setFlash(sess, f)
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// localPath returns next when it is a path of this page, else the fleet
// page, so a sign-in never sends the browser to another site.
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.Scheme != "" || u.Host != "" || u.User != nil || len(next) > 512 ||
		(u.Path != Prefix && !startsWith(u.Path, Prefix+"/")) || startsWith(next, "//") {
		return Prefix + "/"
	}
	return u.RequestURI()
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }
