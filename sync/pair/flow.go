package pair

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"printgate/internal/clock"
	"printgate/internal/loopback"
)

// ClientID is the OAuth client_id the agent pairs as (PROTOCOL.md §6).
const ClientID = "printgate"

// DefaultInterval is how often Wait polls when the cloud names no interval
// (RFC 8628 §3.2); SlowDownStep is what each slow_down answer adds to the
// interval for this and every later poll (§3.5).
const (
	DefaultInterval = 5 * time.Second
	SlowDownStep    = 5 * time.Second
)

// maxAnswer bounds what is read of one answer from the cloud.
const maxAnswer = 1 << 20

// OAuth error codes of RFC 8628 §3.5 that Wait acts on.
const (
	codePending  = "authorization_pending"
	codeSlowDown = "slow_down"
	codeDenied   = "access_denied"
	codeExpired  = "expired_token"
)

// Pending is a pairing the cloud has issued a code for and a manager has yet
// to approve. Show UserCode and URL (as a QR: QRText) to the person, then
// call Wait once.
type Pending struct {
	// UserCode is the short code the manager checks or types in the cloud.
	UserCode string
	// VerificationURI is where the manager types UserCode.
	VerificationURI string
	// VerificationURIComplete is VerificationURI with the code in it, for
	// the QR; "" when the cloud gives none.
	VerificationURIComplete string
	// Expires is when the code runs out, on the clock the pairing was
	// started with.
	Expires time.Time
	// Interval is how long Wait waits before its first poll and between
	// polls, until the cloud asks it to slow down.
	Interval time.Duration
	// Progress, if set before Wait, is called before each wait for the next
	// poll with the time left until Expires, so a command can say how long
	// the code stays valid.
	Progress func(left time.Duration)

	deviceCode string
	tokenURL   string
	client     *http.Client
	clock      clock.Clock
}

// URL is the address a manager opens to approve the pairing:
// VerificationURIComplete when the cloud gave one, else VerificationURI
// (where UserCode must then be typed).
func (p *Pending) URL() string {
	if p.VerificationURIComplete != "" {
		return p.VerificationURIComplete
	}
	return p.VerificationURI
}

// Left is the time until the code expires (negative once it has).
func (p *Pending) Left() time.Duration { return p.Expires.Sub(p.clock.Now()) }

// Start asks the cloud at authURL for a pairing code: POST
// {authURL}/device/code with client_id "printgate". client makes the
// requests (nil: http.DefaultClient); cancelling ctx abandons the request.
// The code's expiry and Wait's polls are timed on the real clock.
func Start(ctx context.Context, authURL string, client *http.Client) (*Pending, error) {
	return StartClock(ctx, authURL, client, clock.RealClock())
}

// StartClock is Start with the clock that times the code's expiry and
// Wait's polls; tests pass a fake one.
func StartClock(ctx context.Context, authURL string, client *http.Client, clock clock.Clock) (*Pending, error) {
	base, err := endpointBase(authURL)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	cfg := oauth2.Config{
		ClientID: ClientID,
		Endpoint: oauth2.Endpoint{
			DeviceAuthURL: base + "/device/code",
			TokenURL:      base + "/token",
			AuthStyle:     oauth2.AuthStyleInParams,
		},
	}
	// oauth2 builds its request without ctx; the transport below puts ctx
	// back so that cancelling really abandons the request.
	// Its Timeout becomes a deadline on ctx instead: oauth2 never closes
	// the answer's body, and with a client Timeout that would keep the
	// request's timer goroutine alive until the timeout.
	ctxClient := *client
	if client.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, client.Timeout)
		defer cancel()
		ctxClient.Timeout = 0
	}
	ctxClient.Transport = ctxTransport{ctx: ctx, rt: transport(client)}
	da, err := cfg.DeviceAuth(context.WithValue(ctx, oauth2.HTTPClient, &ctxClient))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ask the cloud for a pairing code: %w", ctx.Err())
		}
		return nil, fmt.Errorf("ask the cloud for a pairing code at %s: %w", cfg.Endpoint.DeviceAuthURL, err)
	}
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"device_code", da.DeviceCode}, {"user_code", da.UserCode}, {"verification_uri", da.VerificationURI},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if da.Expiry.IsZero() {
		missing = append(missing, "expires_in")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("ask the cloud for a pairing code at %s: the answer has no %s", cfg.Endpoint.DeviceAuthURL, strings.Join(missing, ", "))
	}
	interval := DefaultInterval
	if da.Interval > 0 && da.Interval < int64(time.Hour/time.Second) {
		interval = time.Duration(da.Interval) * time.Second
	}
	return &Pending{
		UserCode:                da.UserCode,
		VerificationURI:         da.VerificationURI,
		VerificationURIComplete: da.VerificationURIComplete,
		// oauth2 turns expires_in into a wall-clock time, less the time the
		// request took; carry the time left over to our clock.
		Expires:    clock.Now().Add(time.Until(da.Expiry)),
		Interval:   interval,
		deviceCode: da.DeviceCode,
		tokenURL:   cfg.Endpoint.TokenURL,
		client:     client,
		clock:      clock,
	}, nil
}

// endpointBase checks authURL and returns it without a trailing slash.
func endpointBase(authURL string) (string, error) {
	u, err := url.Parse(authURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("pairing address %q: want an http:// or https:// address such as https://print.example.com/oauth", authURL)
	}
	// The device code and the token cross this address: in clear only to
	// this machine (a reference cloud in a test or the demo), as the link
	// allows ws:// only to loopback.
	if u.Scheme == "http" && !loopback.Host(u.Hostname()) {
		return "", fmt.Errorf("pairing address %q is http:// to %s, which is not this machine: use https:// (http:// is allowed only to localhost, 127.0.0.1 or [::1])", authURL, u.Hostname())
	}
	return strings.TrimRight(authURL, "/"), nil
}

func transport(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// ctxTransport sends every request with ctx.
type ctxTransport struct {
	ctx context.Context
	rt  http.RoundTripper
}

func (t ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.rt.RoundTrip(r.WithContext(t.ctx))
}

// Wait polls POST {authURL}/token until the manager approves, and returns
// the device token. It waits Interval before the first poll and between
// polls, adds SlowDownStep for every slow_down answer, and keeps polling on
// authorization_pending and on answers that did not arrive (network errors,
// 5xx, 429) while the code is valid. It ends with ErrExpired (the cloud
// answered expired_token, or Expires passed), ErrDenied (access_denied),
// another refusal from the cloud (an *oauth2.RetrieveError, wrapped), or
// ctx's error. Call it once.
func (p *Pending) Wait(ctx context.Context) (string, error) {
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	timer := p.clock.NewTimer(min(interval, p.Left()))
	defer timer.Stop()
	var lastErr error // the last poll that got no answer, for ErrExpired
	for {
		if p.Progress != nil {
			p.Progress(p.Left())
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("wait for the pairing to be approved: %w", ctx.Err())
		case <-timer.C():
		}
		if p.Left() <= 0 {
			if lastErr != nil {
				return "", fmt.Errorf("%w (the last poll failed: %v)", ErrExpired, lastErr)
			}
			return "", ErrExpired
		}
		token, err := p.poll(ctx)
		if err == nil {
			return token, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("wait for the pairing to be approved: %w", ctx.Err())
		}
		var re *oauth2.RetrieveError
		switch {
		case errors.As(err, &re) && re.ErrorCode == codePending:
		case errors.As(err, &re) && re.ErrorCode == codeSlowDown:
			interval += SlowDownStep
		case errors.As(err, &re) && re.ErrorCode == codeDenied:
			return "", ErrDenied
		case errors.As(err, &re) && re.ErrorCode == codeExpired:
			return "", ErrExpired
		case retryable(err):
			lastErr = err
		default:
			return "", fmt.Errorf("the cloud refused the pairing: %w", err)
		}
		timer.Reset(min(interval, p.Left()))
	}
}

// noAnswer is a poll that got no usable answer: worth trying again.
type noAnswer struct{ err error }

func (e *noAnswer) Error() string { return e.err.Error() }
func (e *noAnswer) Unwrap() error { return e.err }

func retryable(err error) bool {
	var na *noAnswer
	if errors.As(err, &na) {
		return true
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode == "" && re.Response != nil {
		c := re.Response.StatusCode
		return c >= 500 || c == http.StatusTooManyRequests
	}
	return false
}

// poll sends one token request (RFC 8628 §3.4) and returns the access
// token, or an *oauth2.RetrieveError for an error answer (§3.5), or a
// *noAnswer when no answer arrived.
func (p *Pending) poll(ctx context.Context) (string, error) {
	form := url.Values{
		"grant_type":  {"urn:ietf:params:oauth:grant-type:device_code"},
		"device_code": {p.deviceCode},
		"client_id":   {ClientID},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("poll %s: %w", p.tokenURL, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return "", &noAnswer{fmt.Errorf("poll the cloud: %w", err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", &noAnswer{fmt.Errorf("poll %s: read the answer: %w", p.tokenURL, err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		re := &oauth2.RetrieveError{Response: resp, Body: body}
		var e struct {
			Code        string `json:"error"`
			Description string `json:"error_description"`
			URI         string `json:"error_uri"`
		}
		if json.Unmarshal(body, &e) == nil {
			re.ErrorCode, re.ErrorDescription, re.ErrorURI = e.Code, e.Description, e.URI
		}
		return "", re
	}
	var ok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &ok); err != nil {
		return "", fmt.Errorf("poll %s: the answer is not JSON: %w", p.tokenURL, err)
	}
	if err := checkToken(ok.AccessToken); err != nil {
		return "", fmt.Errorf("poll %s: the cloud's access_token %w", p.tokenURL, err)
	}
	return ok.AccessToken, nil
}
