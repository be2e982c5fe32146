// Package pairing is the hub's side of the device authorization grant of
// PROTOCOL.md §6 (RFC 8628): the agent asks for a code at
// {auth_url}/device/code, shows the user code as a QR, and polls
// {auth_url}/token until a manager approves the code for a store (the
// order API's POST /v1/pairings/{user_code}/approve), refuses it, or it
// expires. Codes are single use and live in the hub's record, so any
// node answers them.
package pairing

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"printgate/hub/store"
	"printgate/internal/clock"
)

// Defaults of Options.
const (
	// DefaultLifetime is how long a code may be approved.
	DefaultLifetime = 10 * time.Minute
	// DefaultInterval is the least time between two polls.
	DefaultInterval = 5 * time.Second
	// clientID is the only client served (the agent's, sync/pair).
	clientID = "printgate"
	// grantType is the grant_type of a device token request.
	grantType = "urn:ietf:params:oauth:grant-type:device_code"
	// Prefix is where the flow's routes live: the agent's auth_url is
	// {hub}/oauth.
	Prefix = "/oauth"
)

// Options configures the flow.
type Options struct {
	Lifetime, Interval time.Duration
	Clock              clock.Clock
	Logger             *slog.Logger
}

// Flow serves /oauth/device/code and /oauth/token.
type Flow struct {
	st   *store.Store
	opts Options
	mux  *http.ServeMux
}

// New makes the flow over st.
func New(st *store.Store, opts Options) *Flow {
	if opts.Lifetime <= 0 {
		opts.Lifetime = DefaultLifetime
	}
	if opts.Interval < time.Second {
		opts.Interval = DefaultInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f := &Flow{st: st, opts: opts, mux: http.NewServeMux()}
	f.mux.HandleFunc("POST "+Prefix+"/device/code", f.deviceCode)
	f.mux.HandleFunc("POST "+Prefix+"/token", f.token)
	return f
}

// ServeHTTP serves the flow's routes.
func (f *Flow) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

func (f *Flow) deviceCode(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form: "+err.Error())
		return
	}
	if r.PostForm.Get("client_id") != clientID {
		oauthError(w, http.StatusBadRequest, "invalid_client", fmt.Sprintf("client_id must be %q", clientID))
		return
	}
	dc, uc, err := f.st.NewPairing(r.Context(), f.opts.Clock.Now().UTC(), f.opts.Lifetime, f.opts.Interval)
	if err != nil {
		f.opts.Logger.Error("hub pairing: new code", "err", err)
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the hub cannot make a code now; retry")
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	// The approval page of the fleet page (hub/fleet's PairPath).
	uri := scheme + "://" + r.Host + "/fleet/pair"
	writeJSON(w, http.StatusOK, map[string]any{
		"device_code":               dc,
		"user_code":                 uc,
		"verification_uri":          uri,
		"verification_uri_complete": uri + "?user_code=" + uc,
		"expires_in":                int(f.opts.Lifetime / time.Second),
		"interval":                  int(f.opts.Interval / time.Second),
	})
}

func (f *Flow) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form: "+err.Error())
		return
	}
	if r.PostForm.Get("grant_type") != grantType {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type must be %q", grantType))
		return
	}
	if r.PostForm.Get("client_id") != clientID {
		oauthError(w, http.StatusBadRequest, "invalid_client", fmt.Sprintf("client_id must be %q", clientID))
		return
	}
	dc := r.PostForm.Get("device_code")
	if dc == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "device_code is required")
		return
	}
	tok, err := f.st.PollPairing(r.Context(), dc, f.opts.Clock.Now().UTC())
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer"})
	case errors.Is(err, store.ErrPending):
		oauthError(w, http.StatusBadRequest, "authorization_pending", "waiting for a manager to approve the code")
	case errors.Is(err, store.ErrSlowDown):
		oauthError(w, http.StatusBadRequest, "slow_down", err.Error())
	case errors.Is(err, store.ErrExpiredCode):
		oauthError(w, http.StatusBadRequest, "expired_token", "the code expired: run printgate pair again")
	case errors.Is(err, store.ErrDenied):
		oauthError(w, http.StatusBadRequest, "access_denied", "the pairing was refused in the hub")
	case errors.Is(err, store.ErrNotFound):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown or used device code: run printgate pair again")
	default:
		f.opts.Logger.Error("hub pairing: poll", "err", err)
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the hub cannot answer now; retry")
	}
}

// oauthError answers as RFC 6749 §5.2 does.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
