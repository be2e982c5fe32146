package cloudtest

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// codeAnswer is the device authorization answer of RFC 8628 §3.2.
type codeAnswer struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// tokenAnswer is a token endpoint answer: a token or an RFC 6749 error.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

func (tc *testCloud) deviceCode(t *testing.T) codeAnswer {
	t.Helper()
	var a codeAnswer
	if st := tc.httpDo(t, "POST", "/oauth/device/code", url.Values{"client_id": {ClientID}}, "", &a); st != http.StatusOK {
		t.Fatalf("device code: %d", st)
	}
	return a
}

func (tc *testCloud) poll(t *testing.T, deviceCode string) (int, tokenAnswer) {
	t.Helper()
	var a tokenAnswer
	st := tc.httpDo(t, "POST", "/oauth/token", url.Values{
		"grant_type": {GrantTypeDeviceCode}, "device_code": {deviceCode}, "client_id": {ClientID},
	}, "", &a)
	return st, a
}

func wantOAuthError(t *testing.T, st int, a tokenAnswer, code string) {
	t.Helper()
	if st != http.StatusBadRequest || a.Error != code || a.AccessToken != "" {
		t.Fatalf("got %d %+v, want 400 %s", st, a, code)
	}
}

// TestDeviceFlowApproved ensures the device flow answers
// authorization_pending, slow_down when polled faster than the interval
// (which then grows by 5 s), and once approved a token the websocket
// accepts, handed out once.
func TestDeviceFlowApproved(t *testing.T) {
	clock := newFakeClock()
	tc := newCloud(t, Options{Clock: clock, PollInterval: 2 * time.Second, DeviceCodeLifetime: 300 * time.Second})
	a := tc.deviceCode(t)
	host := strings.TrimPrefix(tc.srv.URL, "http://")
	if a.DeviceCode == "" || len(a.UserCode) != 9 || a.UserCode[4] != '-' || a.ExpiresIn != 300 || a.Interval != 2 ||
		a.VerificationURI != "http://"+host+"/device" || a.VerificationURIComplete != a.VerificationURI+"?user_code="+a.UserCode {
		t.Fatalf("answer %+v", a)
	}
	st, tok := tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, tok, "authorization_pending")
	clock.Advance(time.Second)
	st, tok = tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, tok, "slow_down")
	clock.Advance(2 * time.Second) // the old interval is now too fast: 7 s
	st, tok = tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, tok, "slow_down")
	clock.Advance(12 * time.Second) // 7 + 5 after the second slow_down
	st, tok = tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, tok, "authorization_pending")

	var dec struct {
		Approved bool `json:"approved"`
	}
	// Case and dashes do not matter, as people type the code.
	typed := strings.ToLower(strings.ReplaceAll(a.UserCode, "-", ""))
	if st := tc.httpDo(t, "POST", "/oauth/device/approve?user_code="+typed, nil, "", &dec); st != http.StatusOK || !dec.Approved {
		t.Fatalf("approve: %d %+v", st, dec)
	}
	st, tok = tc.poll(t, a.DeviceCode)
	if st != http.StatusOK || tok.AccessToken == "" || tok.TokenType != "Bearer" {
		t.Fatalf("after approval: %d %+v", st, tok)
	}
	st, again := tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, again, "invalid_grant")

	cl := tc.connect(t, tok.AccessToken, "paired")
	if w := cl.handshake("paired"); w.StoreID == "" {
		t.Fatalf("welcome %+v", w)
	}
	// The token now belongs to the agent that used it first.
	if _, resp, err := tc.dial(tok.AccessToken, "other"); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another agent with the token: %v %v", err, resp)
	}
	if err := tc.Approve(a.UserCode); !errors.Is(err, ErrDecided) {
		t.Fatalf("approve again: %v", err)
	}
}

// TestDeviceFlowDenied ensures a denied device gets access_denied and
// cannot then be approved.
func TestDeviceFlowDenied(t *testing.T) {
	tc := newCloud(t, Options{Clock: newFakeClock()})
	a := tc.deviceCode(t)
	if st := tc.httpDo(t, "POST", "/oauth/device/deny", url.Values{"user_code": {a.UserCode}}, "", nil); st != http.StatusOK {
		t.Fatalf("deny: %d", st)
	}
	st, tok := tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, tok, "access_denied")
	if st := tc.httpDo(t, "POST", "/oauth/device/approve?user_code="+a.UserCode, nil, "", nil); st != http.StatusConflict {
		t.Fatalf("approve after deny: %d", st)
	}
}

// TestDeviceFlowExpired ensures a device code past expires_in answers
// expired_token and can no longer be approved.
func TestDeviceFlowExpired(t *testing.T) {
	clock := newFakeClock()
	tc := newCloud(t, Options{Clock: clock, DeviceCodeLifetime: time.Minute})
	a := tc.deviceCode(t)
	clock.Advance(59 * time.Second)
	st, tok := tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, tok, "authorization_pending")
	clock.Advance(time.Second)
	st, tok = tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, tok, "expired_token")
	if st := tc.httpDo(t, "POST", "/oauth/device/approve?user_code="+a.UserCode, nil, "", nil); st != http.StatusGone {
		t.Fatalf("approve expired: %d", st)
	}
	if err := tc.Approve("BBBB-BBBB"); !errors.Is(err, ErrUnknownUserCode) {
		t.Fatalf("approve unknown: %v", err)
	}
}

// TestDeviceFlowBadRequests ensures the OAuth endpoints refuse another
// client, another grant type and an unknown device code with the errors
// of RFC 6749 §5.2, and accept client_id by basic authentication.
func TestDeviceFlowBadRequests(t *testing.T) {
	tc := newCloud(t, Options{Clock: newFakeClock()})
	var a tokenAnswer
	st := tc.httpDo(t, "POST", "/oauth/device/code", url.Values{"client_id": {"pos"}}, "", &a)
	wantOAuthError(t, st, a, "invalid_client")
	code := tc.deviceCode(t)
	for _, tt := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"grant_type": {"password"}, "device_code": {code.DeviceCode}, "client_id": {ClientID}}, "unsupported_grant_type"},
		{url.Values{"grant_type": {GrantTypeDeviceCode}, "device_code": {code.DeviceCode}}, "invalid_client"},
		{url.Values{"grant_type": {GrantTypeDeviceCode}, "client_id": {ClientID}}, "invalid_request"},
		{url.Values{"grant_type": {GrantTypeDeviceCode}, "device_code": {"nope"}, "client_id": {ClientID}}, "invalid_grant"},
	} {
		var a tokenAnswer
		st := tc.httpDo(t, "POST", "/oauth/token", tt.form, "", &a)
		wantOAuthError(t, st, a, tt.want)
	}
	// golang.org/x/oauth2 first sends client_id as basic authentication.
	req, _ := http.NewRequest("POST", tc.srv.URL+"/oauth/token", strings.NewReader(url.Values{
		"grant_type": {GrantTypeDeviceCode}, "device_code": {code.DeviceCode}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(ClientID, "")
	resp, err := tc.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var basic tokenAnswer
	if err := json.NewDecoder(resp.Body).Decode(&basic); err != nil {
		t.Fatal(err)
	}
	wantOAuthError(t, resp.StatusCode, basic, "authorization_pending")
}

// TestDeviceExpire ensures POST /oauth/device/expire ends a pending code
// at once (the next poll gets expired_token and approving it fails with
// 410), and refuses a code already decided or unknown.
func TestDeviceExpire(t *testing.T) {
	tc := newCloud(t, Options{Clock: newFakeClock()})
	a := tc.deviceCode(t)
	if st := tc.httpDo(t, "POST", "/oauth/device/expire?user_code="+a.UserCode, nil, "", nil); st != http.StatusOK {
		t.Fatalf("expire: %d", st)
	}
	st, tok := tc.poll(t, a.DeviceCode)
	wantOAuthError(t, st, tok, "expired_token")
	if st := tc.httpDo(t, "POST", "/oauth/device/approve?user_code="+a.UserCode, nil, "", nil); st != http.StatusGone {
		t.Errorf("approve after expire: %d, want 410", st)
	}
	b := tc.deviceCode(t)
	if err := tc.Deny(b.UserCode); err != nil {
		t.Fatal(err)
	}
	if err := tc.Expire(b.UserCode); !errors.Is(err, ErrDecided) {
		t.Errorf("expire a denied code: %v, want ErrDecided", err)
	}
	if st := tc.httpDo(t, "POST", "/oauth/device/expire?user_code=XXXX-XXXX", nil, "", nil); st != http.StatusNotFound {
		t.Errorf("expire an unknown code: %d, want 404", st)
	}
	if st := tc.httpDo(t, "POST", "/oauth/device/expire", nil, "", nil); st != http.StatusBadRequest {
		t.Errorf("expire without a code: %d, want 400", st)
	}
}
