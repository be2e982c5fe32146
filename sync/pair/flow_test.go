package pair

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"printgate/internal/clock"
)

func start(t *testing.T, s *deviceServer, clock clock.Clock) *Pending {
	t.Helper()
	p, err := StartClock(context.Background(), s.authURL(), s.Client(), clock)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func secs(n ...int) []time.Duration {
	var out []time.Duration
	for _, v := range n {
		out = append(out, time.Duration(v)*time.Second)
	}
	return out
}

// TestWaitPendingSlowDownToken ensures the code the cloud hands out reaches
// the caller, Wait polls at the cloud's interval with the device code grant,
// keeps polling through authorization_pending, slows down by 5 s for good
// on slow_down, and returns the access token once approved.
func TestWaitPendingSlowDownToken(t *testing.T) {
	clock := newSkipClock()
	s := newDeviceServer(t, clock, codePending, codePending, codeSlowDown, codePending, "ok")
	p := start(t, s, clock)

	if got := s.device.Get("client_id"); got != "printgate" {
		t.Errorf("device code request client_id = %q, want printgate", got)
	}
	if p.UserCode != "WDJB-MJHT" || p.VerificationURI != s.URL+"/device" || p.URL() != s.URL+"/device?user_code=WDJB-MJHT" {
		t.Errorf("pending %+v, URL %q", p, p.URL())
	}
	if p.Interval != 5*time.Second {
		t.Errorf("interval %v, want 5s", p.Interval)
	}
	// expires_in 300, less the time the request took.
	if left := p.Left(); left > 300*time.Second || left < 299*time.Second {
		t.Errorf("left %v, want about 300s", left)
	}
	var progress []time.Duration
	p.Progress = func(left time.Duration) { progress = append(progress, left) }

	token, err := p.Wait(context.Background())
	if err != nil || token != "tok-123" {
		t.Fatalf("Wait = %q, %v; want tok-123", token, err)
	}
	// 5 s apart, then 10 s apart from the slow_down on, for every poll after.
	if got, want := s.pollTimes(), secs(5, 10, 15, 25, 35); !slices.Equal(got, want) {
		t.Errorf("polled at %v after start, want %v", got, want)
	}
	for i, f := range s.forms {
		if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:device_code" || f.Get("device_code") != "dc-1" || f.Get("client_id") != "printgate" {
			t.Errorf("poll %d form %v", i+1, f)
		}
	}
	// One report before each wait, with the time left at that moment.
	var elapsed []time.Duration
	for _, left := range progress {
		elapsed = append(elapsed, progress[0]-left)
	}
	if !slices.Equal(elapsed, secs(0, 5, 10, 15, 25)) || progress[0] < 299*time.Second {
		t.Errorf("progress %v: want reports at 0, 5, 10, 15 and 25 s, from about 300 s left", progress)
	}
}

// TestWaitEnds ensures Wait ends with the typed error for each final answer
// of the cloud, after polling no more than needed.
func TestWaitEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []string
		want    error
		msg     string
		polls   int
	}{
		{"expired", []string{codePending, codeExpired}, ErrExpired, "the code expired: run printgate pair again", 2},
		{"denied", []string{codeDenied}, ErrDenied, "the pairing was refused in the cloud", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newSkipClock()
			s := newDeviceServer(t, clock, tc.answers...)
			token, err := start(t, s, clock).Wait(context.Background())
			if !errors.Is(err, tc.want) || token != "" {
				t.Fatalf("Wait = %q, %v; want %v", token, err, tc.want)
			}
			if err.Error() != tc.msg {
				t.Errorf("message %q, want %q", err, tc.msg)
			}
			if n := len(s.pollTimes()); n != tc.polls {
				t.Errorf("%d polls, want %d", n, tc.polls)
			}
		})
	}
}

// TestWaitExpiresLocally ensures a code whose expires_in passes ends Wait
// with ErrExpired even when the cloud keeps answering authorization_pending,
// without polling after the expiry.
func TestWaitExpiresLocally(t *testing.T) {
	clock := newSkipClock()
	// A poll after the expiry would get a token.
	s := newDeviceServer(t, clock, codePending, codePending, codePending, "ok")
	s.setTimes(12, 5)
	_, err := start(t, s, clock).Wait(context.Background())
	if !errors.Is(err, ErrExpired) {
		t.Fatalf("Wait: %v, want ErrExpired", err)
	}
	if got, want := s.pollTimes(), secs(5, 10); !slices.Equal(got, want) {
		t.Errorf("polled at %v, want %v", got, want)
	}
	// The last wait was cut short to the expiry (about 2 s), not a whole interval.
	if w := clock.Waits(); len(w) != 3 || w[2] > 2*time.Second || w[2] < time.Second {
		t.Errorf("waits %v", w)
	}
}

// TestWaitRetriesNoAnswer ensures a poll that gets no answer (a 503) is
// tried again at the next interval, while a refusal Wait does not know ends
// it with the cloud's error code available to the caller.
func TestWaitRetriesNoAnswer(t *testing.T) {
	clock := newSkipClock()
	s := newDeviceServer(t, clock, "503", "ok")
	if token, err := start(t, s, clock).Wait(context.Background()); err != nil || token != "tok-123" {
		t.Fatalf("after a 503: Wait = %q, %v", token, err)
	}

	clock = newSkipClock()
	s = newDeviceServer(t, clock, "invalid_client", "ok")
	_, err := start(t, s, clock).Wait(context.Background())
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_client" || errors.Is(err, ErrExpired) || errors.Is(err, ErrDenied) {
		t.Fatalf("invalid_client: Wait error %v", err)
	}
	if n := len(s.pollTimes()); n != 1 {
		t.Errorf("%d polls after a refusal, want 1", n)
	}
}

// TestWaitCancel ensures cancelling ctx ends Wait while it waits for the
// next poll, with ctx's error and without polling.
func TestWaitCancel(t *testing.T) {
	clock := clock.NewFakeClock(t0)
	s := newDeviceServer(t, clock, "ok")
	p := start(t, s, clock)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Wait(ctx)
		done <- err
	}()
	clock.WaitTimer(t0.Add(time.Hour)) // Wait is asleep until its first poll
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v, want context.Canceled", err)
	}
	if n := len(s.pollTimes()); n != 0 {
		t.Errorf("%d polls after cancel", n)
	}
}

// TestStartErrors ensures a code request the cloud refuses or answers
// incompletely, a bad address, and a cancelled request end Start with an
// error that says which.
func TestStartErrors(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 401, map[string]any{"error": "invalid_client"})
	}))
	defer refuse.Close()
	_, err := Start(context.Background(), refuse.URL, refuse.Client())
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_client" || !strings.Contains(err.Error(), refuse.URL+"/device/code") {
		t.Errorf("refused: %v", err)
	}

	partial := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"device_code": "dc", "verification_uri": "https://x/device"})
	}))
	defer partial.Close()
	if _, err := Start(context.Background(), partial.URL, partial.Client()); err == nil || !strings.Contains(err.Error(), "no user_code, expires_in") {
		t.Errorf("incomplete answer: %v", err)
	}

	if _, err := Start(context.Background(), "ftp://x/oauth", nil); err == nil || !strings.Contains(err.Error(), "http:// or https://") {
		t.Errorf("bad address: %v", err)
	}

	// A pairing address in clear to another machine is refused before any
	// request: the device code and the token would cross the network in
	// clear. The client refuses every request itself, so nothing leaves
	// this machine even when the check is missing.
	var asked atomic.Int32
	noNet := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		asked.Add(1)
		return nil, errors.New("test transport: no request may leave this machine")
	})}
	if _, err := Start(context.Background(), "http://192.0.2.10/oauth", noNet); err == nil || !strings.Contains(err.Error(), "use https://") {
		t.Errorf("clear pairing address across the network: %v", err)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("%d requests made to a clear pairing address across the network", n)
	}

	entered, left := make(chan struct{}), make(chan bool, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm() // read the body, so the server notices the client leaving
		close(entered)
		select {
		case <-r.Context().Done():
			left <- true
		case <-time.After(5 * time.Second): // Start did not give up: fail, not hang
			left <- false
		}
	}))
	defer hang.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	if _, err := Start(ctx, hang.URL, hang.Client()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	if !<-left {
		t.Error("Start did not abandon its request when ctx was cancelled")
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
