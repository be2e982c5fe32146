package localapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent/localapi"
	"printgate/internal/apispec"
)

const testToken = "s3cret-api-token-for-tests"

// secretPayload is a payload whose bytes (and base64) must never come back
// in any answer.
var secretPayload = []byte("\x1b@CUSTOMER CARD 4111-1111 SECRET-MARKER\n\x1dV\x01")

// client sends requests to a handler in-process and checks what every
// answer must satisfy: JSON content type on JSON answers, and neither the
// token nor the secret payload anywhere in the body or headers.
type client struct {
	t    *testing.T
	h    http.Handler
	auth string // Authorization header value; "" sends none
	// remote is the client address ("ip:port") requests come from; ""
	// keeps httptest's 192.0.2.1:1234.
	remote string
}

func newClient(t *testing.T, h http.Handler) *client {
	return &client{t: t, h: h, auth: "Bearer " + testToken}
}

// answer is a response with its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// code returns the error code of an error answer, "" for a success.
func (a answer) code() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (a answer) message() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(a.body, &e)
	return e.Error.Message
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("answer %d %s is not JSON: %v", a.status, a.body, err)
	}
}

func (c *client) do(method, target, body string) answer {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	return c.send(req)
}

func (c *client) send(req *http.Request) answer {
	c.t.Helper()
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	if c.remote != "" {
		req.RemoteAddr = c.remote
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	a := answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	checkAnswer(c.t, req, a)
	return a
}

var codeShape = regexp.MustCompile(`^[a-z_]+$`)

// checkAnswer asserts the invariants of every answer, and that the
// answer is one docs/openapi.yaml describes: its status, headers and body,
// with no field, status or error code the description does not name.
func checkAnswer(t *testing.T, req *http.Request, a answer) {
	t.Helper()
	what := req.Method + " " + req.URL.Path
	spec, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Check(req, a.status, a.header, a.body); err != nil {
		t.Error(err)
	}
	for _, secret := range []string{testToken, string(secretPayload), base64.StdEncoding.EncodeToString(secretPayload), "SECRET-MARKER"} {
		if bytes.Contains(a.body, []byte(secret)) {
			t.Errorf("%s: answer body contains a secret (%.12q...): %s", what, secret, a.body)
		}
		for k, vs := range a.header {
			for _, v := range vs {
				if strings.Contains(v, secret) {
					t.Errorf("%s: header %s contains a secret", what, k)
				}
			}
		}
	}
	if req.URL.Path == "/metrics" && a.status == http.StatusOK {
		return
	}
	mt, _, err := mime.ParseMediaType(a.header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, a.header.Get("Content-Type"))
	}
	if !json.Valid(a.body) {
		t.Errorf("%s: body is not JSON: %s", what, a.body)
	}
	if a.status >= 400 && req.URL.Path != "/healthz" {
		// /healthz answers its own shape even at 503 (a failed core).
		// Everything else: exactly {"error":{"code","message"}}, with a message long enough
		// to say something.
		var e map[string]map[string]string
		err := json.Unmarshal(a.body, &e)
		if err != nil || len(e) != 1 || len(e["error"]) != 2 || !codeShape.MatchString(e["error"]["code"]) || len(e["error"]["message"]) < 20 {
			t.Errorf("%s: %d body %s is not {\"error\":{\"code\",\"message\"}} with a real message", what, a.status, a.body)
		}
	}
}

// submitBody builds a POST /api/v1/tasks body from fields; a nil value
// leaves the field out.
func submitBody(fields map[string]any) string {
	b, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func payloadTask(no, printer string, payload []byte) string {
	return submitBody(map[string]any{"task_no": no, "printer": printer, "payload": base64.StdEncoding.EncodeToString(payload)})
}

// nextVersion is the reprint naming rule of PROTOCOL.md §3: "_vN" becomes
// "_vN+1", anything else gets "_v2" appended.
func nextVersion(taskNo string) string {
	if i := strings.LastIndex(taskNo, "_v"); i >= 0 {
		if n, err := strconv.Atoi(taskNo[i+2:]); err == nil && n > 0 {
			return taskNo[:i] + "_v" + strconv.Itoa(n+1)
		}
	}
	return taskNo + "_v2"
}

func newAPI(t *testing.T, b localapi.Backend, opts localapi.Options) *client {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	return newClient(t, localapi.New(b, opts))
}

func wantStatus(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.code() != code {
		t.Fatalf("got %d %q (%s), want %d %q", a.status, a.code(), a.body, status, code)
	}
}

// newLoopbackServer serves h on 127.0.0.1 (never another interface) until
// the test ends.
func newLoopbackServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// fakeClock is a clock tests advance by hand (Options.Now).
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
