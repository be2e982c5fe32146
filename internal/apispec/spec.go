// Package apispec holds an HTTP API to its OpenAPI description: the agent's
// local API to docs/openapi.yaml (Agent) and the hub's order API to
// docs/hub-openapi.yaml (Hub). It loads a description with kin-openapi and
// checks recorded answers (a handler's or, through Transport, a real
// binary's) against it, so an undocumented status, field or error code
// fails the test that saw it. It also turns the agent's YAML into the JSON
// the agent serves and into docs/ticket.schema.json. Only tests import it:
// the release binaries must not link kin-openapi (deps_test.go bans it).
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
	// HubYAMLPath is the description of the hub's order API
	// (printgate-hub, docs/HUB.md).
	HubYAMLPath = "docs/hub-openapi.yaml"
)

// Description names one API's description in the repository and which of
// a server's answers it covers.
type Description struct {
	// Path is the YAML, relative to the module's root.
	Path string
	// Covered reports whether a request path is the API's (described
	// here); answers to other paths are not checked.
	Covered func(path string) bool
	// Streams reports whether a request's answer streams (a log tail
	// follow): it is left to its reader, unchecked.
	Streams func(r *http.Request) bool
	// Fallback are the answers a request outside every operation (an
	// unknown path, a method a path does not serve) may get, by status:
	// the error code each must carry.
	Fallback map[int]string
}

// Agent is the agent's local API (PROTOCOL.md §3): docs/openapi.yaml.
var Agent = Description{
	Path:    YAMLPath,
	Covered: Covered,
	Streams: func(r *http.Request) bool {
		return r.URL.Path == "/api/v1/logs" && r.URL.Query().Get("follow") != ""
	},
	Fallback: fallback,
}

// Hub is the hub's order API, its pairing endpoints, /healthz and
// /metrics (docs/HUB.md): docs/hub-openapi.yaml. The agents' websocket
// (PROTOCOL.md §5) and the test API (§7) are not described there.
var Hub = Description{
	Path: HubYAMLPath,
	Covered: func(path string) bool {
		return strings.HasPrefix(path, "/v1/") || path == "/oauth/device/code" || path == "/oauth/token" ||
			path == "/healthz" || path == "/metrics"
	},
	// The log tail's stream is text/event-stream, whose body Transport
	// leaves unread (its status and headers are checked) and Handler
	// checks as the text it is once the handler returns.
	Streams: func(*http.Request) bool { return false },
	Fallback: map[int]string{
		http.StatusNotFound:         "not_found",
		http.StatusMethodNotAllowed: "method_not_allowed",
	},
}

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
	d      Description
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

// loadedSpec is one description's load, done once per test binary.
type loadedSpec struct {
	once sync.Once
	spec *Spec
	err  error
}

// loads holds a *loadedSpec per description path.
var loads sync.Map

// Load reads docs/openapi.yaml (Agent) once per test binary, validates it
// as OpenAPI 3.1 and returns it.
func Load() (*Spec, error) { return LoadDescription(Agent) }

// LoadHub is Load for docs/hub-openapi.yaml (Hub).
func LoadHub() (*Spec, error) { return LoadDescription(Hub) }

// LoadDescription reads d's description once per test binary, validates it
// as OpenAPI 3.1 and returns it.
func LoadDescription(d Description) (*Spec, error) {
	v, _ := loads.LoadOrStore(d.Path, &loadedSpec{})
	l := v.(*loadedSpec)
	l.once.Do(func() { l.spec, l.err = load(d) })
	return l.spec, l.err
}

func load(d Description) (*Spec, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(filepath.Join(root, d.Path))
	if err != nil {
		return nil, fmt.Errorf("read the API description: %w", err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(src)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", d.Path, err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("%s is OpenAPI %s, want 3.1", d.Path, doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("%s is not a valid description: %w", d.Path, err)
	}
	// Match paths alone: tests serve the API on any address.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", d.Path, err)
	}
	es := doc.Components.Schemas["Error"]
	if es == nil || es.Value == nil {
		return nil, fmt.Errorf("%s has no components.schemas.Error", d.Path)
	}
	return &Spec{d: d, doc: doc, router: router, errorSchema: es.Value}, nil
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
	if !s.d.Covered(req.URL.Path) || req.Method == http.MethodHead {
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
			return fmt.Errorf("%s, outside every operation of %s: %w", what, s.d.Path, e)
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
		return fmt.Errorf("%s, which %s does not describe (body %.300s): %w", what, s.d.Path, body, err)
	}
	return nil
}

// checkFallback checks an answer outside every operation.
func (s *Spec) checkFallback(status int, header http.Header, body []byte) error {
	code, ok := s.d.Fallback[status]
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
	if err != nil || !t.spec.d.Covered(req.URL.Path) {
		return resp, err
	}
	if t.spec.d.Streams(req) {
		return resp, nil
	}
	if isEventStream(resp.Header) {
		// A stream is left to its reader: its status and headers are
		// checked, its body is not read.
		if cerr := t.spec.Check(req, resp.StatusCode, resp.Header, nil); cerr != nil {
			resp.Body.Close()
			if t.report != nil {
				t.report(cerr)
			}
			return nil, cerr
		}
		return resp, nil
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxChecked))
	resp.Body.Close()
	if rerr != nil {
		return nil, fmt.Errorf("read the answer to check it against %s: %w", t.spec.d.Path, rerr)
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

// isEventStream reports whether an answer is server-sent events.
func isEventStream(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
}

func init() {
	// Server-sent events are text: checked as the string their schema
	// says.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
}

// Violations collects the errors a Transport reported, for a TestMain that
// fails the run when any test's answer broke the description.
type Violations struct {
	spec *Spec // the description checked; nil: the agent's
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
func CheckDefaultClient() (*Violations, error) { return CheckDefaultClientWith(Agent) }

// CheckDefaultClientWith is CheckDefaultClient for d's description.
func CheckDefaultClientWith(d Description) (*Violations, error) {
	s, err := LoadDescription(d)
	if err != nil {
		return nil, err
	}
	v := &Violations{spec: s}
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
	s, err := w.v.spec, error(nil)
	if s == nil {
		s, err = Load()
	}
	path := YAMLPath
	if err == nil {
		path = s.d.Path
		if testing.Verbose() || os.Getenv("APISPEC_SEEN") != "" {
			fmt.Fprintf(os.Stderr, "apispec: %d answers checked against %s\n", s.checked.Load(), path)
		}
		// APISPEC_SEEN names a file that collects, over several test
		// runs, which documented answers some test produced.
		if path := os.Getenv("APISPEC_SEEN"); path != "" {
			s.appendSeen(path)
		}
	}
	if err := w.v.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "answers of the API that %s does not describe:\n%v\n", path, err)
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
		return fmt.Errorf("%s has no components.schemas.%s", s.d.Path, name)
	}
	return ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// Handler wraps next so that every answer it writes is checked with Check
// once the handler returns; report (a test's t.Error) gets each violation.
// A streamed answer (a log tail's follow) is not checked.
func (s *Spec) Handler(next http.Handler, report func(error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.d.Streams(r) {
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

// Operations lists every operation the description names, as
// "METHOD /path" (the path with its {parameters}), for comparing with the
// routes a server's mux serves.
func (s *Spec) Operations() []string {
	var out []string
	for path, item := range s.doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	return out
}
