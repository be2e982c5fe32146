package localapi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"printgate/agent/api"
	"printgate/agent/logring"
	"printgate/internal/warnlimit"
	"printgate/spool"
)

// Options configure the API. Only Token is required for the /api/ routes to
// answer anything but 401.
type Options struct {
	// Token is the bearer token (api_token) every /api/ request must carry.
	// Leading and trailing white space is trimmed, exactly as it is from
	// the token a client presents (see normalizeToken), so a config value
	// like "tok " matches "Authorization: Bearer tok". Empty (or only
	// white space) refuses every /api/ request: an agent without a token
	// must not take print jobs from anyone on the LAN.
	Token string
	// MaxBodyBytes caps a request body; larger bodies are refused with 413
	// before they are read. Default BodyLimit(1 MiB), which fits a 1 MiB
	// ticket as base64 inside JSON. Keep it in step with the spool's
	// MaxTaskBytes through BodyLimit (spool.DefaultMaxTaskBytes by default).
	MaxBodyBytes int64
	// Metrics is served at /metrics (to the token or to loopback clients).
	// Nil answers /metrics with 404.
	Metrics prometheus.Gatherer
	// Logger receives one debug record per request, the causes of 5xx
	// answers and one warning per lockout of a client that sent too many
	// wrong tokens. Nil discards. Tokens are never logged.
	Logger *slog.Logger
	// Tail, if set, serves GET /api/v1/logs (to the token): the agent's
	// recent and, with follow, new log lines, redacted, as support's remote
	// tail sees them. Nil answers 404.
	Tail func(ctx context.Context, o logring.TailOptions, send func(lines []string) error) error
	// Now is the clock of the failed-authentication throttle
	// (AuthFailureLimit wrong tokens within AuthFailureWindow lock a client
	// address out). Nil is time.Now; tests inject a fake.
	Now func() time.Time
}

// BodyLimit is the request body limit that fits a task of maxTaskBytes:
// base64 grows the payload by 4/3, and 64 KiB covers the JSON around it.
func BodyLimit(maxTaskBytes int) int64 {
	n := int64(maxTaskBytes)
	return (n+2)/3*4 + 64<<10
}

// server holds the handlers' shared state.
type server struct {
	b       Backend
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	metrics http.Handler
	// tokenSum is SHA-256 of the token: comparing fixed-size digests in
	// constant time leaks neither the token's bytes nor its length.
	tokenSum [sha256.Size]byte
	hasToken bool
	// throttle locks out client addresses that send wrong tokens, per Host.
	throttle *throttle
	// peerLines bounds the log lines a client can provoke at will
	// (docs/DESIGN.md, invariant 10); every such line goes through it.
	peerLines *warnlimit.Limiter
}

// New returns the handler for every route of PROTOCOL.md §3, answering from
// b. Mount it at the root of the agent's listener (or at /api/, /healthz and
// /metrics next to the manager page).
func New(b Backend, opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = BodyLimit(spool.DefaultMaxTaskBytes)
	}
	opts.Token = normalizeToken(opts.Token)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &server{b: b, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.throttle = newThrottle(opts.Now)
	s.peerLines = &warnlimit.Limiter{Now: opts.Now}
	if opts.Token != "" {
		s.tokenSum = sha256.Sum256([]byte(opts.Token))
		s.hasToken = true
	}
	if opts.Metrics != nil {
		s.metrics = promhttp.HandlerFor(opts.Metrics, promhttp.HandlerOpts{
			ErrorLog:      promLogger{s.log, s.peerLines},
			ErrorHandling: promhttp.ContinueOnError,
		})
	}

	s.route("/api/v1/tasks", true, map[string]http.HandlerFunc{
		http.MethodPost: s.submit,
		http.MethodGet:  s.list,
	})
	s.route("/api/v1/tasks/{task_no}", true, map[string]http.HandlerFunc{http.MethodGet: s.get})
	s.route("/api/v1/tasks/{task_no}/payload", true, map[string]http.HandlerFunc{http.MethodGet: s.payload})
	s.route("/api/v1/tasks/{task_no}/reprint", true, map[string]http.HandlerFunc{http.MethodPost: s.reprint})
	s.route("/api/v1/tasks/{task_no}/cancel", true, map[string]http.HandlerFunc{http.MethodPost: s.cancel})
	s.route("/api/v1/printers", true, map[string]http.HandlerFunc{http.MethodGet: s.printers})
	s.route("/api/v1/reload", true, map[string]http.HandlerFunc{http.MethodPost: s.reload})
	s.route("/api/v1/logs", true, map[string]http.HandlerFunc{http.MethodGet: s.logs})
	s.route(OpenAPIPath, false, map[string]http.HandlerFunc{http.MethodGet: serveOpenAPI})
	s.route("/healthz", false, map[string]http.HandlerFunc{http.MethodGet: s.healthz})
	s.route("/metrics", false, map[string]http.HandlerFunc{http.MethodGet: s.serveMetrics})
	// Unknown paths under /api/ ask for the token first, so the route list
	// is not probeable without it.
	s.mux.Handle("/api/", s.requireToken(http.HandlerFunc(notFound)))
	s.mux.HandleFunc("/", notFound)
	return s
}

// route registers handlers for path by method, plus a method-less pattern
// for the same path that answers 405 in JSON (ServeMux's own 405 is plain
// text). ServeMux prefers the method patterns, so the fallback only sees the
// methods nobody handles.
func (s *server) route(path string, auth bool, byMethod map[string]http.HandlerFunc) {
	var allow []string
	for method, h := range byMethod {
		var handler http.Handler = h
		if auth {
			handler = s.requireToken(handler)
		}
		s.mux.Handle(method+" "+path, handler)
		allow = append(allow, method)
		if method == http.MethodGet {
			allow = append(allow, http.MethodHead)
		}
	}
	slices.Sort(allow)
	allowed := strings.Join(allow, ", ")
	var fallback http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allowed)
		writeError(w, newError(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "%s is not allowed on %s; use %s", r.Method, r.URL.Path, allowed))
	})
	if auth {
		fallback = s.requireToken(fallback)
	}
	s.mux.Handle(path, fallback)
}

// ServeHTTP dispatches r and logs it at debug level: method, path, status
// and duration only, never headers (the token) or the query.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.mux.ServeHTTP(w, r)
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	start := time.Now()
	s.mux.ServeHTTP(rec, r)
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", rec.status()),
		slog.Duration("duration", time.Since(start)),
		slog.String("remote", r.RemoteAddr),
	)
}

// fail answers with e and logs its cause: at error level for a 5xx, where
// the cause is the only record of what went wrong, at debug level otherwise.
func (s *server) fail(w http.ResponseWriter, r *http.Request, e *apiError) {
	if e.cause != nil {
		level := slog.LevelDebug
		if e.status >= 500 {
			level = slog.LevelError
		}
		// A client can provoke a 5xx at will while the disk fails.
		s.peerLines.Log(s.log, level, "http request failed",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", e.status),
			slog.String("code", e.code),
			slog.Any("err", e.cause),
		)
	}
	writeError(w, e)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such endpoint %s; see PROTOCOL.md §3 for the API", r.URL.Path))
}

// statusRecorder remembers the status a handler wrote, for the log.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection underneath.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// promLogger routes promhttp's gather errors to slog, rate-limited: each
// scrape can provoke one.
type promLogger struct {
	log   *slog.Logger
	lines *warnlimit.Limiter
}

func (l promLogger) Println(v ...any) {
	l.lines.Warn(l.log, "metrics gather", slog.String("err", strings.TrimSpace(fmt.Sprintln(v...))))
}
