package fleet

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"printgate/hub/store"
)

// loginForm is the data of the sign-in form.
type loginForm struct {
	Token  string
	Tenant string
	Name   string
	Next   string
	Error  string
}

func (p *Page) loginForm(w http.ResponseWriter, r *http.Request) {
	if p.sessions.get(r) != nil {
		http.Redirect(w, r, localPath(r.FormValue("next")), http.StatusSeeOther)
		return
	}
	p.renderLogin(w, r, http.StatusOK, loginForm{Next: localPath(r.FormValue("next"))})
}

func (p *Page) renderLogin(w http.ResponseWriter, r *http.Request, status int, f loginForm) {
	v := p.newView(r, nil)
	v.Title = v.L.T("login.title")
	f.Token = p.formToken(w, r)
	v.Data = f
	p.render(w, status, "login.html", "layout", v)
}

// clientAddr is the client's address for the throttle: the connection's
// (a proxy in front of the hub counts as one client).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// tooMany answers 429 with Retry-After and the sign-in form saying how
// long to wait.
func (p *Page) tooMany(w http.ResponseWriter, r *http.Request, f loginForm, left time.Duration) {
	secs := int((left + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	f.Error = pickLang(r).T("login.locked", secs)
	p.renderLogin(w, r, http.StatusTooManyRequests, f)
}

func (p *Page) loginSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	c, err := r.Cookie(preCookie)
	if err != nil || !tokensEqual(r.PostFormValue("csrf"), c.Value) {
		p.csrfRefused(w, r, nil)
		return
	}
	l := pickLang(r)
	f := loginForm{Tenant: strings.TrimSpace(strings.ToLower(r.PostFormValue("tenant"))), Name: strings.TrimSpace(strings.ToLower(r.PostFormValue("name"))),
		Next: localPath(r.PostFormValue("next"))}
	addr, user := clientAddr(r), f.Tenant+"."+f.Name
	if left := max(p.byAddr.lockedFor(addr), p.byUser.lockedFor(user)); left > 0 {
		p.tooMany(w, r, f, left)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	p.checkMu.Lock()
	// Checks queue here: one that waited while a lockout began is refused
	// unchecked.
	if left := max(p.byAddr.lockedFor(addr), p.byUser.lockedFor(user)); left > 0 {
		p.checkMu.Unlock()
		p.tooMany(w, r, f, left)
		return
	}
	u, err := p.st.CheckUser(ctx, f.Tenant, f.Name, r.PostFormValue("password"))
	p.checkMu.Unlock()
	switch {
	case errors.Is(err, store.ErrNotFound):
		lockedAddr, lockedUser := p.byAddr.fail(addr), p.byUser.fail(user)
		if lockedAddr || lockedUser {
			// Through the limiter: an attacker rotating addresses trips the
			// per-address hold every 10 guesses.
			p.peerLines.Warn(p.log, "fleet page: too many wrong passwords; sign-ins are refused for a minute",
				"client", addr, "tenant", shorten(f.Tenant), "user", shorten(f.Name),
				"address_held", lockedAddr, "user_held", lockedUser)
		}
		f.Error = l.T("login.wrong")
		p.renderLogin(w, r, http.StatusUnauthorized, f)
		return
	case err != nil:
		p.serverError(w, r, nil, "what.signin", err)
		return
	}
	p.byAddr.succeed(addr)
	p.byUser.succeed(user)
	_, id := p.sessions.create(u.Tenant, u.Name)
	p.setCookie(w, sessionCookie, id, int(sessionMax/time.Second))
	p.setCookie(w, preCookie, "", -1)
	p.log.LogAttrs(r.Context(), slog.LevelInfo, "fleet page: signed in", slog.String("tenant", u.Tenant), slog.String("user", u.Name), slog.String("client", addr))
	http.Redirect(w, r, f.Next, http.StatusSeeOther)
}

func (p *Page) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	p.sessions.remove(sess)
	p.setCookie(w, sessionCookie, "", -1)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
