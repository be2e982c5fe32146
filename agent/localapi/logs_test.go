package localapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/agent/localapi"
	"printgate/agent/logring"
	"printgate/internal/clock"
)

var logT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// logAPI is an API whose Tail is a real ring on a fake clock, with a logger
// writing into it at debug level.
type logAPI struct {
	ring  *logring.Ring
	clock *clock.FakeClock
	log   *slog.Logger
	h     http.Handler
	// tailDone receives Tail's result when a tail ends, if it is empty.
	tailDone chan error
}

func newLogAPI(t *testing.T) *logAPI {
	t.Helper()
	clock := clock.NewFakeClock(logT0)
	ring := logring.New(logring.Options{Clock: clock})
	a := &logAPI{ring: ring, clock: clock, log: slog.New(ring.Handler(slog.LevelDebug)), tailDone: make(chan error, 1)}
	a.h = localapi.New(newFake(), localapi.Options{
		Token: testToken,
		Tail: func(ctx context.Context, o logring.TailOptions, send func([]string) error) error {
			err := ring.Tail(ctx, o, send)
			select {
			case a.tailDone <- err:
			default: // nobody is watching this test's tails
			}
			return err
		},
	})
	return a
}

// get asks for target in-process with the token (auth "" sends none) and
// returns the status, the headers and the body.
func (a *logAPI) get(t *testing.T, target, auth string) (int, http.Header, string) {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.String()
}

// bodyLines splits a text answer into its lines.
func bodyLines(body string) []string {
	body = strings.TrimSuffix(body, "\n")
	if body == "" {
		return nil
	}
	return strings.Split(body, "\n")
}

// TestLogsRecentFiltered ensures GET /api/v1/logs sends the recent lines as
// text, one per line, oldest first, filtered by level (default info) and
// by q, at most lines of them, never cached.
func TestLogsRecentFiltered(t *testing.T) {
	a := newLogAPI(t)
	a.log.Debug("dialing kitchen")
	a.log.Info("task printed", "task_no", "A1_v1", "printer", "kitchen")
	a.log.Warn("printer offline", "printer", "bar")
	a.log.Info("task printed", "task_no", "A2_v1", "printer", "bar")
	a.log.Error("spool nearly full")

	for _, tc := range []struct {
		query string
		want  []string // substrings of each line, in order
	}{
		{"", []string{"A1_v1", "printer offline", "A2_v1", "spool nearly full"}},
		{"?level=debug", []string{"dialing kitchen", "A1_v1", "printer offline", "A2_v1", "spool nearly full"}},
		{"?level=WARN", []string{"printer offline", "spool nearly full"}},
		{"?level=error", []string{"spool nearly full"}},
		{"?q=KITCHEN", []string{"A1_v1"}},
		{"?q=kitchen&level=debug", []string{"dialing kitchen", "A1_v1"}},
		{"?q=bar", []string{"printer offline", "A2_v1"}},
		{"?lines=2", []string{"A2_v1", "spool nearly full"}},
		{"?lines=0", nil},
		{"?q=nothing-like-this", nil},
		{"?follow=0&lines=1", []string{"spool nearly full"}},
	} {
		status, h, body := a.get(t, "/api/v1/logs"+tc.query, "Bearer "+testToken)
		if status != 200 {
			t.Fatalf("%s: %d %s", tc.query, status, body)
		}
		if ct := h.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", tc.query, ct)
		}
		if cc := h.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q", tc.query, cc)
		}
		lines := bodyLines(body)
		if len(lines) != len(tc.want) {
			t.Errorf("%s: %d lines, want %d:\n%s", tc.query, len(lines), len(tc.want), body)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("%s: line %d is %q, want it to hold %q", tc.query, i, lines[i], w)
			}
		}
	}
}

// TestLogsDefaultLines ensures a request without lines gets the 100 most
// recent lines, and lines caps at 1000.
func TestLogsDefaultLines(t *testing.T) {
	a := newLogAPI(t)
	for i := 0; i < 150; i++ {
		a.log.Info("line", "n", i)
	}
	_, _, body := a.get(t, "/api/v1/logs", "Bearer "+testToken)
	lines := bodyLines(body)
	if len(lines) != localapi.DefaultLogLines || !strings.HasSuffix(lines[len(lines)-1], "n=149") || !strings.HasSuffix(lines[0], "n=50") {
		t.Errorf("default: %d lines from %q to %q, want the last %d", len(lines), lines[0], lines[len(lines)-1], localapi.DefaultLogLines)
	}
	_, _, body = a.get(t, "/api/v1/logs?lines=1000", "Bearer "+testToken)
	if n := len(bodyLines(body)); n != 150 {
		t.Errorf("lines=1000: %d lines, want all 150", n)
	}
}

// TestLogsBadQuery ensures a wrong parameter is refused with 400 bad_query
// in the API's JSON error format, naming what is wrong.
func TestLogsBadQuery(t *testing.T) {
	a := newLogAPI(t)
	c := newClient(t, a.h) // checks the JSON error shape
	for _, tc := range []struct{ query, inMessage string }{
		{"?level=verbose", "verbose"},
		{"?lines=1001", "1000"},
		{"?lines=-1", "1000"},
		{"?lines=ten", "ten"},
		{"?follow=maybe", "maybe"},
		{"?levle=warn", "levle"},
		{"?q=a&q=b", "twice"},
	} {
		ans := c.do("GET", "/api/v1/logs"+tc.query, "")
		if ans.status != 400 || ans.code() != api.CodeBadQuery {
			t.Errorf("%s: %d %s, want 400 bad_query", tc.query, ans.status, ans.body)
			continue
		}
		if tc.inMessage != "twice" && !strings.Contains(ans.message(), tc.inMessage) {
			t.Errorf("%s: message %q does not name %q", tc.query, ans.message(), tc.inMessage)
		}
	}
	// An empty value is the default, not an error.
	if status, _, body := a.get(t, "/api/v1/logs?level=&lines=&follow=", "Bearer "+testToken); status != 200 {
		t.Errorf("empty values: %d %s, want 200", status, body)
	}
}

// TestLogsNeedToken ensures the log, like every /api/ route, needs the
// bearer token, and that an agent without a tail answers 404 in JSON.
func TestLogsNeedToken(t *testing.T) {
	a := newLogAPI(t)
	a.log.Info("something happened")
	for _, auth := range []string{"", "Bearer wrong-token-0123456789", "Basic " + testToken} {
		status, h, body := a.get(t, "/api/v1/logs", auth)
		if status != 401 || strings.Contains(body, "something happened") {
			t.Errorf("Authorization %q: %d %s, want 401 without the log", auth, status, body)
		}
		if h.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: no WWW-Authenticate", auth)
		}
	}

	c := newAPI(t, newFake(), localapi.Options{})
	wantStatus(t, c.do("GET", "/api/v1/logs", ""), 404, api.CodeNotFound)
	c.auth = ""
	wantStatus(t, c.do("GET", "/api/v1/logs", ""), 401, api.CodeUnauthorized)
	c = newClient(t, a.h)
	wantStatus(t, c.do("POST", "/api/v1/logs", ""), 405, api.CodeMethodNotAllowed)
}

// TestLogsTokenNeverSent ensures the API token, logged in any of the usual
// ways, never comes out of the log endpoint, recent or followed, and that
// q cannot find it (the filter runs on the redacted line).
func TestLogsTokenNeverSent(t *testing.T) {
	a := newLogAPI(t)
	a.log.Info("config loaded", "api_token", testToken)
	a.log.Debug("request headers", "headers", "Authorization: Bearer "+testToken)
	a.log.Warn("client sent Bearer " + testToken)
	a.log.Info("url", "u", "http://127.0.0.1:8631/api/v1/logs?token="+testToken)

	_, _, body := a.get(t, "/api/v1/logs?level=debug", "Bearer "+testToken)
	if len(bodyLines(body)) != 4 {
		t.Fatalf("want the 4 lines, redacted:\n%s", body)
	}
	if strings.Contains(body, testToken) {
		t.Errorf("the token is in the log answer:\n%s", body)
	}
	if !strings.Contains(body, logring.Redacted) {
		t.Errorf("no redaction marker in:\n%s", body)
	}
	_, _, body = a.get(t, "/api/v1/logs?level=debug&q="+testToken[:12], "Bearer "+testToken)
	if body != "" {
		t.Errorf("q found the token in the redacted lines:\n%s", body)
	}

	srv := newLoopbackServer(t, a.h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lines := follow(ctx, t, srv.URL+"/api/v1/logs?follow=1&lines=0&level=debug")
	a.clock.WaitTimer(logT0.Add(logring.DefaultMaxDuration)) // the follower is registered
	a.log.Info("late", "api_token", testToken, "then", "Bearer "+testToken)
	got := <-lines
	if !strings.Contains(got, "late") || strings.Contains(got, testToken) {
		t.Errorf("followed line %q: want the late line without the token", got)
	}
}

// follow opens a following GET on url with the token and returns the lines
// as they arrive; the channel closes when the answer ends.
func follow(ctx context.Context, t *testing.T, url string) <-chan string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("follow: %d %s", resp.StatusCode, b)
	}
	out := make(chan string, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	t.Cleanup(func() { resp.Body.Close(); <-done })
	return out
}

// TestLogsFollow ensures follow=1 sends the recent lines, then each line
// logged after the request as it is logged (the answer is flushed, not
// held), that the answer ends when the tail reaches its maximum duration,
// and that a client going away ends the tail on the agent.
func TestLogsFollow(t *testing.T) {
	a := newLogAPI(t)
	a.log.Info("before the request")
	srv := newLoopbackServer(t, a.h)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lines := follow(ctx, t, srv.URL+"/api/v1/logs?follow=true&lines=5&q=printer")
	a.clock.WaitTimer(logT0.Add(logring.DefaultMaxDuration))
	a.log.Info("printer kitchen is ready")
	a.log.Info("unrelated")
	a.log.Warn("printer bar went offline")
	for _, want := range []string{"printer kitchen is ready", "printer bar went offline"} {
		select {
		case got := <-lines:
			if !strings.Contains(got, want) {
				t.Fatalf("got %q, want a line holding %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no line %q arrived while following", want)
		}
	}
	// The tail's maximum duration ends the answer with a line saying so.
	a.clock.Advance(logring.DefaultMaxDuration)
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if len(rest) != 1 || !strings.Contains(rest[0], "maximum duration") {
		t.Errorf("after the maximum duration: %q, want the end notice then the end of the answer", rest)
	}
	if err := <-a.tailDone; err != nil {
		t.Errorf("tail ended with %v", err)
	}

	// A client that goes away ends the tail.
	ctx2, cancel2 := context.WithCancel(ctx)
	lines = follow(ctx2, t, srv.URL+"/api/v1/logs?follow=1&lines=0")
	cancel2()
	for range lines {
	}
	select {
	case err := <-a.tailDone:
		if err == nil {
			t.Errorf("tail of a client that left returned nil, want the context's error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tail is still running after its client went away")
	}
}

// TestLogsErrorsAreJSON ensures an error answer of the log route is the
// API's JSON error, not text.
func TestLogsErrorsAreJSON(t *testing.T) {
	a := newLogAPI(t)
	status, h, body := a.get(t, "/api/v1/logs?level=loud", "Bearer "+testToken)
	var e struct {
		Error struct{ Code, Message string }
	}
	if status != 400 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "bad_query" {
		t.Errorf("%d %q %s", status, h.Get("Content-Type"), body)
	}
}
