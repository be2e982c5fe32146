package cloudtest

import (
	"crypto/rand"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// The device authorization grant of RFC 8628 (PROTOCOL.md §6).
const (
	// ClientID is the only client the device flow serves.
	ClientID = "printgate"
	// GrantTypeDeviceCode is the grant_type of a device token request.
	GrantTypeDeviceCode = "urn:ietf:params:oauth:grant-type:device_code"
	// slowDownStep is what RFC 8628 §3.5 adds to the interval on every
	// slow_down, for that and every later request.
	slowDownStep = 5 * time.Second
)

// deviceAuth is one device authorization request.
type deviceAuth struct {
	deviceCode string
	userCode   string // as shown: XXXX-XXXX
	made       time.Time
	expires    time.Time
	interval   time.Duration // grows by slowDownStep on every slow_down
	lastPoll   time.Time     // zero until the first poll
	state      deviceState
	token      string // issued on approval, handed out once
}

type deviceState int

const (
	devicePending deviceState = iota
	deviceApproved
	deviceDenied
	deviceUsed
)

func (c *Cloud) routeDevice(mux *http.ServeMux) {
	mux.HandleFunc("POST /oauth/device/code", c.serveDeviceCode)
	mux.HandleFunc("POST /oauth/token", c.serveToken)
	mux.HandleFunc("POST /oauth/device/approve", func(w http.ResponseWriter, r *http.Request) { c.serveDecide(w, r, true) })
	mux.HandleFunc("POST /oauth/device/deny", func(w http.ResponseWriter, r *http.Request) { c.serveDecide(w, r, false) })
	mux.HandleFunc("POST /oauth/device/expire", c.serveExpire)
	mux.HandleFunc("GET /device", c.serveDevicePage)
}

// serveDeviceCode answers the device authorization request (RFC 8628
// §3.1, §3.2).
func (c *Cloud) serveDeviceCode(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form: "+err.Error())
		return
	}
	if id := clientID(r); id != ClientID {
		oauthError(w, http.StatusBadRequest, "invalid_client", fmt.Sprintf("client_id must be %q", ClientID))
		return
	}
	now := c.opts.Clock.Now()
	d := &deviceAuth{
		deviceCode: randomString(32),
		userCode:   newUserCode(),
		made:       now,
		expires:    now.Add(c.opts.DeviceCodeLifetime),
		interval:   c.opts.PollInterval,
	}
	c.mu.Lock()
	c.pruneDevicesLocked(now)
	for c.users[normalizeUserCode(d.userCode)] != nil {
		d.userCode = newUserCode()
	}
	c.devices[d.deviceCode] = d
	c.users[normalizeUserCode(d.userCode)] = d
	c.notify()
	c.mu.Unlock()

	uri := c.opts.VerificationURI
	if uri == "" {
		uri = "http://" + r.Host + "/device"
	}
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	writeOAuthJSON(w, http.StatusOK, map[string]any{
		"device_code":               d.deviceCode,
		"user_code":                 d.userCode,
		"verification_uri":          uri,
		"verification_uri_complete": uri + sep + "user_code=" + d.userCode,
		"expires_in":                int(c.opts.DeviceCodeLifetime / time.Second),
		"interval":                  int(d.interval / time.Second),
	})
}

// serveToken answers the device access token request (RFC 8628 §3.4,
// §3.5).
func (c *Cloud) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form: "+err.Error())
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != GrantTypeDeviceCode {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type must be %q", GrantTypeDeviceCode))
		return
	}
	if id := clientID(r); id != ClientID {
		oauthError(w, http.StatusBadRequest, "invalid_client", fmt.Sprintf("client_id must be %q", ClientID))
		return
	}
	code := r.PostForm.Get("device_code")
	if code == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "device_code is required")
		return
	}
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.devices[code]
	if d == nil || d.state == deviceUsed {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown device_code, or its token was already issued")
		return
	}
	last := d.lastPoll
	d.lastPoll = now
	c.notify()
	switch {
	case d.state == deviceApproved:
		d.state = deviceUsed
		writeOAuthJSON(w, http.StatusOK, map[string]any{"access_token": d.token, "token_type": "Bearer"})
	case d.state == deviceDenied && !c.opts.Broken.IgnoreDeny:
		oauthError(w, http.StatusBadRequest, "access_denied", "the manager denied this device")
	case !now.Before(d.expires) && !c.opts.Broken.IgnoreExpiry:
		oauthError(w, http.StatusBadRequest, "expired_token", "the device code expired: request a new one")
	case !last.IsZero() && now.Sub(last) < d.interval-d.interval/5 && !c.opts.Broken.IgnoreSlowDown:
		// Faster than the interval, less a fifth for network jitter.
		d.interval += slowDownStep
		oauthError(w, http.StatusBadRequest, "slow_down",
			fmt.Sprintf("polled %v after the last poll; poll every %v from now on", now.Sub(last), d.interval))
	default:
		oauthError(w, http.StatusBadRequest, "authorization_pending", "waiting for a manager to approve "+d.userCode)
	}
}

// serveDecide is what scanning the QR code and pressing approve (or deny)
// does: POST /oauth/device/approve?user_code=....
func (c *Cloud) serveDecide(w http.ResponseWriter, r *http.Request, approve bool) {
	userCode := r.FormValue("user_code")
	if userCode == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "user_code is required")
		return
	}
	var err error
	if approve {
		err = c.Approve(userCode)
	} else {
		err = c.Deny(userCode)
	}
	if err != nil {
		writeGoError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"user_code": userCode, "approved": approve})
}

// serveExpire ends a pending device code's life now, as waiting out its
// expires_in would: POST /oauth/device/expire?user_code=....
func (c *Cloud) serveExpire(w http.ResponseWriter, r *http.Request) {
	userCode := r.FormValue("user_code")
	if userCode == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "user_code is required")
		return
	}
	if err := c.Expire(userCode); err != nil {
		writeGoError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"user_code": userCode, "expired": true})
}

// Expire makes the pending device authorization with userCode expire now,
// so a test sees expired_token without waiting out expires_in. It fails
// with ErrUnknownUserCode, or ErrDecided for one already approved or
// denied.
func (c *Cloud) Expire(userCode string) error {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.users[normalizeUserCode(userCode)]
	switch {
	case d == nil:
		return fmt.Errorf("cloudtest: expire %q: %w", userCode, ErrUnknownUserCode)
	case d.state != devicePending:
		return fmt.Errorf("cloudtest: expire %q: %w", userCode, ErrDecided)
	}
	if now.Before(d.expires) {
		d.expires = now
	}
	c.notify()
	return nil
}

// Approve approves the device authorization with userCode (case and
// dashes do not matter), as a manager scanning the QR code does: the
// agent's next poll gets a device token, valid at the websocket for the
// first agent id that connects with it. It fails with ErrUnknownUserCode,
// ErrExpired or ErrDecided.
func (c *Cloud) Approve(userCode string) error { return c.decide(userCode, true) }

// Deny denies the device authorization with userCode: the agent's next
// poll gets access_denied. It fails as Approve does.
func (c *Cloud) Deny(userCode string) error { return c.decide(userCode, false) }

func (c *Cloud) decide(userCode string, approve bool) error {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.users[normalizeUserCode(userCode)]
	switch {
	case d == nil:
		return fmt.Errorf("cloudtest: %s %q: %w", verb, userCode, ErrUnknownUserCode)
	case d.state != devicePending:
		return fmt.Errorf("cloudtest: %s %q: %w", verb, userCode, ErrDecided)
	case !now.Before(d.expires):
		return fmt.Errorf("cloudtest: %s %q: expired at %s: %w", verb, userCode, d.expires.Format(time.RFC3339), ErrExpired)
	}
	if approve {
		d.state = deviceApproved
		d.token = randomString(32)
		c.tokens[d.token] = &token{}
	} else {
		d.state = deviceDenied
	}
	c.notify()
	return nil
}

// pruneDevicesLocked forgets device authorizations one lifetime after
// they expired, and the oldest beyond MaxDeviceCodes - 1 so one more
// fits. c.mu must be held.
func (c *Cloud) pruneDevicesLocked(now time.Time) {
	var oldest *deviceAuth
	for _, d := range c.devices {
		if now.Sub(d.expires) > c.opts.DeviceCodeLifetime {
			c.forgetDeviceLocked(d)
		}
	}
	for len(c.devices) >= c.opts.MaxDeviceCodes {
		oldest = nil
		for _, d := range c.devices {
			if oldest == nil || d.made.Before(oldest.made) {
				oldest = d
			}
		}
		c.forgetDeviceLocked(oldest)
	}
}

func (c *Cloud) forgetDeviceLocked(d *deviceAuth) {
	delete(c.devices, d.deviceCode)
	delete(c.users, normalizeUserCode(d.userCode))
}

// clientID is the client_id of the form, or the user of HTTP basic
// authentication (how golang.org/x/oauth2 first tries to send it).
func clientID(r *http.Request) string {
	if id := r.PostForm.Get("client_id"); id != "" {
		return id
	}
	id, _, _ := r.BasicAuth()
	return id
}

// userCodeAlphabet is RFC 8628 §6.1's suggestion: consonants only, so no
// word is spelled and nothing is mistaken for a digit.
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// newUserCode is eight characters as XXXX-XXXX.
func newUserCode() string {
	b := make([]byte, 8)
	rand.Read(b)
	out := make([]byte, 0, 9)
	for i, v := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, userCodeAlphabet[int(v)%len(userCodeAlphabet)])
	}
	return string(out)
}

// normalizeUserCode ignores case, dashes and spaces, as people type them.
func normalizeUserCode(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(s))
}

var devicePage = template.Must(template.New("device").Parse(`<!doctype html>
<meta charset="utf-8"><title>printgate cloudtest: pair a store PC</title>
<h1>Pair a store PC</h1>
<p>This is the reference cloud, a test double: approving here issues a device token.</p>
<form method="post"><input name="user_code" value="{{.}}" placeholder="XXXX-XXXX" autofocus>
<button formaction="/oauth/device/approve">Approve</button>
<button formaction="/oauth/device/deny">Deny</button></form>
`))

// serveDevicePage is the verification URI: a form that approves or
// denies a user code.
func (c *Cloud) serveDevicePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	devicePage.Execute(w, r.URL.Query().Get("user_code"))
}
