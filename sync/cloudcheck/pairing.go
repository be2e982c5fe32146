package cloudcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"printgate/sync/pair"
	"printgate/sync/wire"
)

var pairingNames = []string{"pairing.device_code", "pairing.interval", "pairing.slow_down",
	"pairing.approve", "pairing.expired_token", "pairing.access_denied"}

// deviceCode is the answer to a device authorization request (RFC 8628
// §3.2).
type deviceCode struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

func (d deviceCode) interval() time.Duration {
	if d.Interval > 0 {
		return time.Duration(d.Interval) * time.Second
	}
	return pair.DefaultInterval
}

// pollAnswer is one token poll's answer: the error code of RFC 8628 §3.5,
// or the access token.
type pollAnswer struct {
	status int
	code   string
	token  string
	err    error // no usable answer
}

func (a pollAnswer) String() string {
	switch {
	case a.err != nil:
		return "no answer (" + a.err.Error() + ")"
	case a.token != "":
		return "an access_token"
	case a.code != "":
		return a.code
	}
	return fmt.Sprintf("HTTP %d without an error code", a.status)
}

func (ch *checker) authPost(ctx context.Context, path string, form url.Values) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(ch.opts.AuthURL, "/")+path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := ch.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// newCode asks for a device code; problem says what was wrong with the
// answer.
func (ch *checker) newCode(ctx context.Context) (deviceCode, string) {
	var d deviceCode
	status, body, err := ch.authPost(ctx, "/device/code", url.Values{"client_id": {pair.ClientID}})
	switch {
	case err != nil:
		return d, fmt.Sprintf("POST %s/device/code: %v", ch.opts.AuthURL, err)
	case status != http.StatusOK:
		return d, fmt.Sprintf("POST %s/device/code (client_id %s) got HTTP %d: %.200s", ch.opts.AuthURL, pair.ClientID, status, body)
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return d, fmt.Sprintf("the device code answer is not the JSON of RFC 8628 §3.2: %v", err)
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"device_code", d.DeviceCode}, {"user_code", d.UserCode}, {"verification_uri", d.VerificationURI}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if d.ExpiresIn <= 0 {
		missing = append(missing, "expires_in")
	}
	if len(missing) > 0 {
		return d, "the device code answer has no " + strings.Join(missing, ", ")
	}
	return d, ""
}

func (ch *checker) poll(ctx context.Context, d deviceCode) pollAnswer {
	status, body, err := ch.authPost(ctx, "/token", url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {d.DeviceCode}, "client_id": {pair.ClientID},
	})
	if err != nil {
		return pollAnswer{err: err}
	}
	var a struct {
		Error       string `json:"error"`
		AccessToken string `json:"access_token"`
	}
	json.Unmarshal(body, &a)
	return pollAnswer{status: status, code: a.Error, token: a.AccessToken}
}

// pairing checks the device flow of §6: the code, polling at the interval,
// slow_down when polled too fast, and, driven by the test API, approval
// (with the agent's own pairing code), expiry and denial.
func (ch *checker) pairing(ctx context.Context) []Result {
	if ch.opts.AuthURL == "" {
		return ch.skipAll(pairingNames, "no --auth-url: the device flow (§6) was not checked")
	}
	var out []Result
	c := ch.begin("pairing.device_code")
	d, problem := ch.newCode(ctx)
	if problem != "" {
		out = append(out, c.fail("answer POST {auth_url}/device/code with device_code, user_code, verification_uri, expires_in (and interval) as RFC 8628 §3.2", "%s", problem))
		return append(out, ch.skipAll(pairingNames[1:], "no device code (see pairing.device_code)")...)
	}
	complete := "no verification_uri_complete (the QR then holds verification_uri)"
	if d.VerificationURIComplete != "" {
		complete = "verification_uri_complete " + d.VerificationURIComplete
	}
	out = append(out, c.pass("user_code %s, verification_uri %s, %s, expires_in %d s, interval %v", d.UserCode, d.VerificationURI, complete, d.ExpiresIn, d.interval()))

	checks := []struct {
		name string
		run  func(context.Context) Result
	}{
		{"pairing.interval", ch.checkInterval},
		{"pairing.slow_down", ch.checkSlowDown},
		{"pairing.approve", ch.checkApprove},
		{"pairing.expired_token", func(ctx context.Context) Result {
			return ch.checkDecided(ctx, "pairing.expired_token", "expire", "expired_token")
		}},
		{"pairing.access_denied", func(ctx context.Context) Result {
			return ch.checkDecided(ctx, "pairing.access_denied", "deny", "access_denied")
		}},
	}
	results := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, k := range checks {
		if !ch.wanted(k.name) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = k.run(ctx)
		}()
	}
	wg.Wait()
	for i, k := range checks {
		if ch.wanted(k.name) {
			out = append(out, results[i])
		}
	}
	return out
}

// checkInterval polls twice at the interval the code names: both must be
// authorization_pending.
func (ch *checker) checkInterval(ctx context.Context) Result {
	c := ch.begin("pairing.interval")
	d, problem := ch.newCode(ctx)
	if problem != "" {
		return c.fail("", "%s", problem)
	}
	var got []string
	for range 2 {
		ch.sleep(ctx, d.interval())
		a := ch.poll(ctx, d)
		got = append(got, a.String())
		if a.code != "authorization_pending" {
			return c.fail("answer a poll that keeps the interval with authorization_pending while no one has approved (RFC 8628 §3.5)",
				"polls every %v (the interval named) got %s", d.interval(), strings.Join(got, ", "))
		}
	}
	return c.pass("two polls %v apart (the interval named) got authorization_pending", d.interval())
}

// checkSlowDown polls at once after a poll: slow_down; then at the
// interval plus 5 s: authorization_pending. A "fast" poll that could not be
// sent within half the interval of the last (a slow network) proves
// nothing and is sent again, up to three times.
func (ch *checker) checkSlowDown(ctx context.Context) Result {
	c := ch.begin("pairing.slow_down")
	d, problem := ch.newCode(ctx)
	if problem != "" {
		return c.fail("", "%s", problem)
	}
	ch.sleep(ctx, d.interval())
	first := ch.poll(ctx, d)
	if first.code != "authorization_pending" {
		return c.fail("", "the first poll, %v after the code, got %s", d.interval(), first)
	}
	var fast pollAnswer
	var gap time.Duration
	for try := 0; ; try++ {
		at := ch.clock.Now()
		fast = ch.poll(ctx, d)
		gap = ch.clock.Now().Sub(at)
		if fast.code == "slow_down" {
			break
		}
		if fast.code != "authorization_pending" || gap < d.interval()/2 {
			return c.fail("answer a poll that comes sooner than the interval with slow_down and add 5 s to the interval (RFC 8628 §3.5): a thousand stores polling too fast are a load the cloud must be able to refuse",
				"a poll %s after the last one (the interval is %v) got %s", ms(gap), d.interval(), fast)
		}
		if try == 2 {
			return c.skip("no poll could be sent within half the interval (%v) of the last; the last took %s", d.interval()/2, ms(gap))
		}
	}
	slower := d.interval() + pair.SlowDownStep
	ch.sleep(ctx, slower)
	next := ch.poll(ctx, d)
	if next.code != "authorization_pending" {
		return c.fail("after slow_down, take polls at the interval plus 5 s", "a poll %v after the slow_down got %s", slower, next)
	}
	return c.pass("a poll %s after the last got slow_down; one %v later (interval + 5 s) got authorization_pending", ms(gap), slower)
}

// checkApprove pairs as the agent does (sync/pair), approves the code
// through the test API, and uses the token at the websocket.
func (ch *checker) checkApprove(ctx context.Context) Result {
	c := ch.begin("pairing.approve")
	if why := ch.needAPI("approve the code as a manager would"); why != "" {
		return c.skip("%s", why)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pend, err := pair.StartClock(pctx, ch.opts.AuthURL, ch.http, ch.clock)
	if err != nil {
		return c.fail("", "the agent's pairing could not start: %v", err)
	}
	if err := ch.api.decide(ctx, "approve", pend.UserCode); err != nil {
		return c.fail("", "approving %s through the test API failed: %v", pend.UserCode, err)
	}
	done := make(chan struct{})
	var tok string
	go func() {
		defer close(done)
		tok, err = pend.Wait(pctx)
	}()
	t := ch.clock.NewTimer(pend.Interval + ch.opts.Step)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		cancel()
		<-done
		return c.fail("answer the first poll after approval with the access_token", "no token within %v of the approval", pend.Interval+ch.opts.Step)
	}
	if err != nil {
		return c.fail("answer the first poll after approval with {\"access_token\":...,\"token_type\":\"Bearer\"}", "the agent's pairing ended: %v", err)
	}
	// The token must open the websocket for a new agent.
	agentID := ch.runID + "-paired"
	h := ch.dial(ctx, tok, agentID, []string{wire.Subprotocol}, true)
	if h.conn == nil {
		return c.fail("accept the device token the device flow issued at the websocket handshake", "the approved token's handshake got %s", h)
	}
	defer h.conn.Close()
	welcome, err := helloWelcome(h, agentID, ch.opts.Version)
	if err != nil {
		return c.fail("answer hello with welcome for an agent paired through the device flow", "with the approved token: %v", err)
	}
	return c.pass("approved %s: the agent's own pairing got a token at its next poll, and it opened the websocket (welcome, store_id %q)", pend.UserCode, welcome.StoreID)
}

// helloWelcome says hello on a probe connection and reads the welcome.
func helloWelcome(h handshakeResult, agentID, version string) (*wire.Welcome, error) {
	frame, _ := wire.Encode(&wire.Hello{AgentID: agentID, Version: version, Printers: []wire.Printer{}})
	h.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := h.conn.WriteMessage(1, frame); err != nil {
		return nil, fmt.Errorf("send hello: %w", err)
	}
	h.conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, data, err := h.conn.ReadMessage()
	if err != nil {
		return nil, fmt.Errorf("no welcome: %w", err)
	}
	m, err := wire.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("the answer to hello does not decode: %w", err)
	}
	w, ok := m.(*wire.Welcome)
	if !ok {
		return nil, errors.New("the answer to hello was " + describe(m) + ", not welcome")
	}
	return w, nil
}

// checkDecided drives a code through the test API (verb expire or deny)
// and polls once at the interval: the answer must be want.
func (ch *checker) checkDecided(ctx context.Context, name, verb, want string) Result {
	c := ch.begin(name)
	what := map[string]string{"expire": "make a code expire without waiting out expires_in", "deny": "deny a code as a manager would"}[verb]
	if why := ch.needAPI(what); why != "" {
		return c.skip("%s", why)
	}
	d, problem := ch.newCode(ctx)
	if problem != "" {
		return c.fail("", "%s", problem)
	}
	if err := ch.api.decide(ctx, verb, d.UserCode); err != nil {
		return c.fail("", "%s %s through the test API failed: %v", verb, d.UserCode, err)
	}
	ch.sleep(ctx, d.interval())
	a := ch.poll(ctx, d)
	if a.code != want {
		fix := map[string]string{
			"expired_token": "answer a poll for an expired code with expired_token (RFC 8628 §3.5): the agent then says \"the code expired: run printgate pair again\"",
			"access_denied": "answer a poll for a denied code with access_denied (RFC 8628 §3.5): the agent then says \"the pairing was refused in the cloud\"",
		}[want]
		return c.fail(fix, "after %s of %s, the next poll got %s", map[string]string{"expire": "the expiry", "deny": "the denial"}[verb], d.UserCode, a)
	}
	return c.pass("after %s of %s, the next poll got %s", map[string]string{"expire": "the expiry", "deny": "the denial"}[verb], d.UserCode, a)
}
