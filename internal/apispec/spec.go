// Package apispec holds the local API to its description, docs/openapi.yaml:
// it loads the description with kin-openapi and checks recorded answers
// (a handler's or, through Transport, the real binary's) against it, so an
// undocumented status, field or error code fails the test that saw it. It
// also turns the YAML into the JSON the agent serves and into
// docs/ticket.schema.json. Only tests import it: the release binary must
// not link kin-openapi (deps_test.go bans it).
package apispec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Files of the description, relative to the module's root.
const (
	// YAMLPath is the description as people edit it.
	YAMLPath = "docs/openapi.yaml"
	// ServedPath is the JSON the agent embeds and serves at
	// /api/v1/openapi.json, generated from YAMLPath.
	ServedPath = "agent/localapi/openapi.json"
	// TicketPath is the ticket document's schema on its own, generated
	// from YAMLPath's Ticket* components.
	TicketPath = "docs/ticket.schema.json"
)

// Root is the module's root directory: the nearest parent of the working
// directory (a test's package directory) that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Spec is the loaded description and a router over its paths.
type Spec struct {
	doc    *openapi3.T
	router routers.Router
	// errorSchema is components.schemas.Error, which answers outside any
	// operation (unknown paths and methods) must match.
	errorSchema *openapi3.Schema
	// checked counts the answers Check looked at, for the -v summary.
	checked atomic.Int64
	// seen are the documented answers ("GET /healthz 200") Check saw.
	seenMu sync.Mutex
	seen   map[string]bool
}

var (
	loadOnce sync.Once
	loaded   *Spec
	loadErr  error
)

// Load reads docs/openapi.yaml once per test binary, validates it as
// OpenAPI 3.1 and returns it.
func Load() (*Spec, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

func load() (*Spec, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(filepath.Join(root, YAMLPath))
	if err != nil {
		return nil, fmt.Errorf("read the API description: %w", err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(src)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", YAMLPath, err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("%s is OpenAPI %s, want 3.1", YAMLPath, doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("%s is not a valid description: %w", YAMLPath, err)
	}
	// Match paths alone: tests serve the API on any address.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", YAMLPath, err)
	}
	es := doc.Components.Schemas["Error"]
	if es == nil || es.Value == nil {
		return nil, fmt.Errorf("%s has no components.schemas.Error", YAMLPath)
	}
	return &Spec{doc: doc, router: router, errorSchema: es.Value}, nil
}

// Covered reports whether path is the API's (described here), rather than
// the manager page's, which is for people and not described.
func Covered(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/api" || path == "/healthz" || path == "/metrics"
}

// fallback are the answers a request outside every operation (an unknown
// path, a method a path does not serve) may get, by status: the code each
// must carry. PROTOCOL.md §3 and the description's info say so.
var fallback = map[int]string{
	http.StatusUnauthorized:       "unauthorized",
	http.StatusForbidden:          "cross_origin",
	http.StatusNotFound:           "not_found",
	http.StatusMethodNotAllowed:   "method_not_allowed",
	http.StatusMisdirectedRequest: "misdirected_request",
	http.StatusTooManyRequests:    "too_many_requests",
}

// serverAnswers are the plain-text answers net/http's server writes itself,
// before any handler of the agent runs (the description's info names
// them): by status, the start of the body.
var serverAnswers = map[int][]string{
	http.StatusBadRequest:                  {"Client sent an HTTP request to an HTTPS server.", "400 Bad Request"},
	http.StatusRequestHeaderFieldsTooLarge: {"431 Request Header Fields Too Large"},
}

// fromServer reports whether an answer is one of serverAnswers.
func fromServer(status int, header http.Header, body []byte) bool {
	if ct := header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "text/plain") {
		return false
	}
	for _, prefix := range serverAnswers[status] {
		if bytes.HasPrefix(body, []byte(prefix)) {
			return true
		}
	}
	return false
}

// Check validates one answer to req against the description: its status
// must be one the operation lists, its declared headers present and
// well-formed, its body the schema of that status (no field the schema
// does not name). Answers outside the API's paths are not checked; answers
// to a path or method no operation has must be a documented fallback
// error. HEAD answers have no body to check.
func (s *Spec) Check(req *http.Request, status int, header http.Header, body []byte) error {
	if !Covered(req.URL.Path) || req.Method == http.MethodHead {
		return nil
	}
	s.checked.Add(1)
	if fromServer(status, header, body) {
		return nil
	}
	what := fmt.Sprintf("%s %s answered %d", req.Method, req.URL.Path, status)
	r := req.Clone(context.Background())
	// The router matches the path; the URL of a server-side request has no
	// scheme or host.
	r.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	route, params, err := s.router.FindRoute(r)
	if err != nil {
		if e := s.checkFallback(status, header, body); e != nil {
			return fmt.Errorf("%s, outside every operation of %s: %w", what, YAMLPath, e)
		}
		return nil
	}
	s.seenMu.Lock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[fmt.Sprintf("%s %s %d", route.Method, route.Path, status)] = true
	s.seenMu.Unlock()
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      route,
		},
		Status: status,
		Header: header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s, which %s does not describe (body %.300s): %w", what, YAMLPath, body, err)
	}
	return nil
}

// checkFallback checks an answer outside every operation.
func (s *Spec) checkFallback(status int, header http.Header, body []byte) error {
	code, ok := fallback[status]
	if !ok {
		return fmt.Errorf("status %d is not one a request outside the operations can get", status)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := s.errorSchema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("body is not the Error schema: %w", err)
	}
	if got := v.(map[string]any)["error"].(map[string]any)["code"]; got != code {
		return fmt.Errorf("code %v, want %s for status %d", got, code, status)
	}
	if status == http.StatusMethodNotAllowed && header.Get("Allow") == "" {
		return errors.New("a 405 without Allow")
	}
	return nil
}

// Transport returns a RoundTripper that sends through next (nil is
// http.DefaultTransport) and checks each answer with Check. An answer that
// fails is reported to report and its request fails with the error, so
// the test that made it sees it whichever way it reads the answer.
func (s *Spec) Transport(next http.RoundTripper, report func(error)) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{spec: s, next: next, report: report}
}

type transport struct {
	spec   *Spec
	next   http.RoundTripper
	report func(error)
}

// maxChecked bounds the body read for a check: a follow of the log tail
// streams; it is left to its reader, unchecked past its status.
const maxChecked = 8 << 20

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !Covered(req.URL.Path) {
		return resp, err
	}
	if req.URL.Path == "/api/v1/logs" && req.URL.Query().Get("follow") != "" {
		return resp, nil
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxChecked))
	resp.Body.Close()
	if rerr != nil {
		return nil, fmt.Errorf("read the answer to check it against %s: %w", YAMLPath, rerr)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if cerr := t.spec.Check(req, resp.StatusCode, resp.Header, body); cerr != nil {
		if t.report != nil {
			t.report(cerr)
		}
		return nil, cerr
	}
	return resp, nil
}

// Violations collects the errors a Transport reported, for a TestMain that
// fails the run when any test's answer broke the description.
type Violations struct {
	mu   sync.Mutex
	errs []error
}

// Add records err.
func (v *Violations) Add(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err)
}

// Err joins every recorded error, nil when there is none.
func (v *Violations) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return errors.Join(v.errs...)
}

// CheckDefaultClient makes http.DefaultClient (so http.Get and
// http.DefaultClient.Do) check every answer of the API against the
// description, for a TestMain: the returned Violations holds what failed,
// which the TestMain reports and fails the run with after m.Run. It leaves
// http.DefaultTransport alone: code under test clones it as an
// *http.Transport.
func CheckDefaultClient() (*Violations, error) {
	s, err := Load()
	if err != nil {
		return nil, err
	}
	v := &Violations{}
	http.DefaultClient.Transport = s.Transport(http.DefaultClient.Transport, v.Add)
	return v, nil
}

// Runner is what testing.M and goleak.VerifyTestMain share.
type Runner interface{ Run() int }

// Wrap returns m whose Run fails (exit code 1) when, after the tests, v
// holds a violation, and prints each on stderr.
func (v *Violations) Wrap(m Runner) Runner { return wrapped{m, v} }

type wrapped struct {
	m Runner
	v *Violations
}

func (w wrapped) Run() int {
	code := w.m.Run()
	if s, err := Load(); err == nil {
		if testing.Verbose() || os.Getenv("APISPEC_SEEN") != "" {
			fmt.Fprintf(os.Stderr, "apispec: %d answers checked against %s\n", s.checked.Load(), YAMLPath)
		}
		// APISPEC_SEEN names a file that collects, over several test
		// runs, which documented answers some test produced.
		if path := os.Getenv("APISPEC_SEEN"); path != "" {
			s.appendSeen(path)
		}
	}
	if err := w.v.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "answers of the API that %s does not describe:\n%v\n", YAMLPath, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// ValidateSchema validates v (decoded JSON) against the description's
// components.schemas[name], as JSON Schema 2020-12.
func (s *Spec) ValidateSchema(name string, v any) error {
	ref := s.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("%s has no components.schemas.%s", YAMLPath, name)
	}
	return ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// Handler wraps next so that every answer it writes is checked with Check
// once the handler returns; report (a test's t.Error) gets each violation.
// A follow of the log tail is not checked: it streams.
func (s *Spec) Handler(next http.Handler, report func(error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/logs" && r.URL.Query().Get("follow") != "" {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if err := s.Check(r, rec.status(), w.Header(), rec.body.Bytes()); err != nil {
			report(err)
		}
	})
}

// recorder keeps a copy of what a handler writes, up to maxChecked.
type recorder struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.body.Len() < maxChecked {
		r.body.Write(p)
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// appendSeen adds the documented answers Check saw to the file at path,
// one a line.
func (s *Spec) appendSeen(path string) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apispec:", err)
		return
	}
	defer f.Close()
	for k := range s.seen {
		fmt.Fprintln(f, k)
	}
}

// Documented lists every answer the description names, as
// "METHOD /path status", for comparing with what the tests saw.
func (s *Spec) Documented() []string {
	var out []string
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				out = append(out, method+" "+path+" "+status)
			}
		}
	}
	return out
}
