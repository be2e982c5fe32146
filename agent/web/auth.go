package web

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"printgate/agent/lockout"
)

// pinCommand is what a person runs on the PC to set or change the PIN.
const pinCommand = "printgate pin set"

// pinResult is the outcome of a PIN check.
type pinResult int

const (
	pinOK pinResult = iota
	pinWrong
	pinLocked // the client is locked out; the PIN was not checked
	pinUnset  // no PIN is stored
	pinError  // the PIN file could not be read
)

// checkPIN checks pin for r's client, counting a wrong one against its
// address and the shared budget, and returns how long it is locked out
// when it is. For pinError it returns the *Problem to show.
func (p *Page) checkPIN(r *http.Request, pin string) (pinResult, time.Duration, error) {
	if dev, ok := p.devices.device(r); ok {
		return p.checkDevicePIN(r, dev, pin)
	}
	addr := pinClient(r)
	if left := p.pinLockedFor(addr); left > 0 {
		return pinLocked, left, nil
	}
	hash, err := LoadPIN(p.opts.DataDir)
	if errors.Is(err, ErrNoPIN) {
		return pinUnset, 0, nil
	}
	if err != nil {
		return pinError, 0, pinReadProblem(p.opts.DataDir, err)
	}
	p.pinMu.Lock()
	defer p.pinMu.Unlock()
	// Checks queue on pinMu: one that waited while a lockout began is
	// refused, not checked.
	if left := p.pinLockedFor(addr); left > 0 {
		return pinLocked, left, nil
	}
	if VerifyPIN(hash, pin) {
		p.lockout.Succeed(addr)
		return pinOK, 0, nil
	}
	if left := p.pinFailed(r, addr); left > 0 {
		return pinLocked, left, nil
	}
	p.log.LogAttrs(r.Context(), slog.LevelInfo, "manager page: wrong PIN", slog.String("client", lockout.ClientAddr(r).String()))
	return pinWrong, 0, nil
}

// checkDevicePIN checks pin from a browser that signed in before (device.go):
// neither the client's lockout nor the shared pause applies, only the
// device's own DeviceFailureLimit, whose last wrong PIN forgets the device.
func (p *Page) checkDevicePIN(r *http.Request, dev [sha256.Size]byte, pin string) (pinResult, time.Duration, error) {
	hash, err := LoadPIN(p.opts.DataDir)
	if errors.Is(err, ErrNoPIN) {
		return pinUnset, 0, nil
	}
	if err != nil {
		return pinError, 0, pinReadProblem(p.opts.DataDir, err)
	}
	p.pinMu.Lock()
	defer p.pinMu.Unlock()
	if VerifyPIN(hash, pin) {
		p.devices.succeed(dev)
		return pinOK, 0, nil
	}
	forgot, err := p.devices.fail(dev)
	if err != nil {
		p.log.LogAttrs(r.Context(), slog.LevelError, "manager page: cannot forget a browser that typed wrong PINs", slog.Any("err", err))
	}
	if forgot {
		p.log.LogAttrs(r.Context(), slog.LevelWarn, "manager page: a browser that had signed in before typed too many wrong PINs; it is no longer exempt from a PIN pause",
			slog.String("client", lockout.ClientAddr(r).String()), slog.Int("wrong_pins", DeviceFailureLimit))
	}
	p.log.LogAttrs(r.Context(), slog.LevelInfo, "manager page: wrong PIN", slog.String("client", lockout.ClientAddr(r).String()), slog.Bool("known_browser", true))
	return pinWrong, 0, nil
}

// pinSet reports whether a PIN is stored (an unreadable file counts as
// set: setup must never overwrite a PIN it cannot read).
func (p *Page) pinSet() bool {
	_, err := LoadPIN(p.opts.DataDir)
	return !errors.Is(err, ErrNoPIN)
}

// authForm is the data of the login and setup forms.
type authForm struct {
	Token   string // the form's CSRF token
	Code    string // the setup code, again, once it was typed right
	Error   string
	Next    string
	Min     int
	Max     int
	Command string
}

func (p *Page) setupAllowed(r *http.Request) bool {
	return fromLoopback(r) && !p.pinSet()
}

func (p *Page) setupRefused(w http.ResponseWriter, r *http.Request) {
	l := pickLang(r)
	body := l.T("setup.refused.away")
	if p.pinSet() {
		body = l.T("setup.refused.set")
	}
	p.showMessage(w, r, http.StatusForbidden, l.T("setup.refused"), message{Body: body, Command: pinCommand})
}

func (p *Page) setupForm(w http.ResponseWriter, r *http.Request) {
	if !p.setupAllowed(r) {
		p.setupRefused(w, r)
		return
	}
	p.renderSetup(w, r, http.StatusOK, "", "")
}

// renderSetup shows the setup form; code is the setup code to fill in
// again (one the client typed right), else "".
func (p *Page) renderSetup(w http.ResponseWriter, r *http.Request, status int, errText, code string) {
	v := p.newView(r, nil, "")
	v.Title = v.L.T("setup.title")
	v.Data = authForm{Token: p.formToken(w, r), Code: code, Error: errText, Min: MinPINLength, Max: MaxPINLength}
	p.render(w, r, status, "setup.html", v)
}

func (p *Page) setupSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if !checkFormToken(r) {
		p.csrfRefused(w, r)
		return
	}
	l := pickLang(r)
	pin, pin2 := r.PostFormValue("pin"), r.PostFormValue("pin2")
	p.pinMu.Lock()
	if !p.setupAllowed(r) {
		p.pinMu.Unlock()
		p.setupRefused(w, r)
		return
	}
	code := r.PostFormValue("code")
	switch res, left := p.checkSetupCode(r, code); res {
	case codeOK:
	case codeLocked:
		p.pinMu.Unlock()
		p.renderSetup(w, r, http.StatusTooManyRequests, l.T("setup.locked", seconds(left)), "")
		return
	case codeWrong:
		p.pinMu.Unlock()
		p.renderSetup(w, r, http.StatusUnauthorized, l.T("setup.code.wrong"), "")
		return
	case codeMissing:
		p.pinMu.Unlock()
		p.renderSetup(w, r, http.StatusForbidden, l.T("setup.code.missing"), "")
		return
	default:
		p.pinMu.Unlock()
		p.showProblem(w, r, http.StatusInternalServerError, "", &Problem{What: "problem.setupcode.read", Fix: "problem.setupcode.read.fix",
			Args: []any{SetupCodePath(p.opts.DataDir)}, Command: pinCommand})
		return
	}
	var errText string
	switch {
	case pin != pin2:
		errText = l.T("setup.mismatch")
	case CheckPINFormat(pin) != nil:
		errText = l.T("setup.badformat", MinPINLength, MaxPINLength)
	default:
		if err := SetPIN(p.opts.DataDir, pin); err != nil {
			p.pinMu.Unlock()
			p.serverError(w, r, "problem.pin.write", err)
			return
		}
	}
	p.pinMu.Unlock()
	if errText != "" {
		p.renderSetup(w, r, http.StatusBadRequest, errText, code)
		return
	}
	p.log.LogAttrs(r.Context(), slog.LevelInfo, "manager page: PIN set from this PC's browser with the setup code; the code is deleted")
	p.signIn(w, r, "/")
}

// signIn starts a new session (a fresh id, so none chosen before login
// survives it) and sends the browser on.
func (p *Page) signIn(w http.ResponseWriter, r *http.Request, next string) {
	_, id := p.sessions.create()
	p.setSessionCookie(w, id)
	if err := p.devices.remember(w, r, p.opts.TLS); err != nil {
		p.log.LogAttrs(r.Context(), slog.LevelError, "manager page: cannot remember this browser; it signs in like any other during a PIN pause", slog.Any("err", err))
	}
	p.clearCookie(w, preCookie)
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

func (p *Page) loginForm(w http.ResponseWriter, r *http.Request) {
	if !p.pinSet() {
		p.noPIN(w, r)
		return
	}
	if p.sessions.get(r) != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if left := p.pinLockedFor(pinClient(r)); left > 0 && !p.devices.known(r) {
		p.renderLocked(w, r, left)
		return
	}
	p.renderLogin(w, r, http.StatusOK, "")
}

// noPIN answers a login before any PIN exists: setup from this PC, or how
// to set one.
func (p *Page) noPIN(w http.ResponseWriter, r *http.Request) {
	if fromLoopback(r) {
		http.Redirect(w, r, "/setup", http.StatusSeeOther)
		return
	}
	l := pickLang(r)
	p.showMessage(w, r, http.StatusForbidden, l.T("login.nopin.title"), message{Body: l.T("login.nopin.body"), Command: pinCommand})
}

func (p *Page) renderLogin(w http.ResponseWriter, r *http.Request, status int, errText string) {
	v := p.newView(r, nil, "")
	v.Title = v.L.T("login.title")
	next := localPath(r.FormValue("next"))
	v.Data = authForm{Token: p.formToken(w, r), Error: errText, Next: next}
	p.render(w, r, status, "login.html", v)
}

func seconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

func (p *Page) loginSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if !checkFormToken(r) {
		p.csrfRefused(w, r)
		return
	}
	l := pickLang(r)
	res, left, err := p.checkPIN(r, r.PostFormValue("pin"))
	switch res {
	case pinOK:
		p.log.LogAttrs(r.Context(), slog.LevelInfo, "manager page: signed in", slog.String("client", lockout.ClientAddr(r).String()))
		p.signIn(w, r, r.PostFormValue("next"))
	case pinUnset:
		p.noPIN(w, r)
	case pinLocked:
		p.renderLocked(w, r, left)
	case pinWrong:
		p.renderLogin(w, r, http.StatusUnauthorized, l.T("login.wrong"))
	default:
		p.showProblem(w, r, http.StatusInternalServerError, "", err)
	}
}

func (p *Page) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	p.sessions.remove(sess)
	p.clearCookie(w, sessionCookie)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
