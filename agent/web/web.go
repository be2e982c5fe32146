package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"printgate/agent/lockout"
	"printgate/drivers/escpos"
	"printgate/internal/warnlimit"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the page.
type Options struct {
	// DataDir holds the manager PIN's hash (PINFile).
	DataDir string
	// TLS marks the session cookie Secure: set it when the listener
	// serves HTTPS, so the cookie never travels in clear.
	TLS bool
	// Logger receives logins, lockouts and the causes of 5xx answers.
	// Nil discards. PINs, session ids and tokens are never logged.
	Logger *slog.Logger
	// Now is the clock of sessions, the PIN lockout and alerts. Nil is
	// time.Now; tests inject a fake.
	Now func() time.Time
	// API serves /api/, /healthz and /metrics (the localapi handler). The
	// page hands those requests over untouched: no page cookie counts
	// there and no bearer token counts on the page. Nil answers 404.
	API http.Handler
	// Version is shown in the footer.
	Version string
	// ConfigPath is the running config file. The printers page appends
	// discovered printers to it; empty turns that off (the page says so).
	ConfigPath string
}

// Limits that keep the page's memory bounded.
const (
	// MaxStreams caps the server-sent event streams open at once
	// (/events, /logs/stream, /printers/scan); more are answered 503.
	MaxStreams = 32
	// maxFormBytes caps a form body.
	maxFormBytes = 64 << 10
	// heartbeat is how often an idle event stream sends a comment, so
	// proxies and phones do not drop it.
	heartbeat = 15 * time.Second
)

// Page is the manager page: an http.Handler for the agent's listener that
// also owns a goroutine following the backend's changes (for alerts and
// live updates) and any LAN scan started from it. Close stops them.
type Page struct {
	b    Backend
	opts Options
	log  *slog.Logger
	now  func() time.Time
	mux  *http.ServeMux
	tmpl map[string]*template.Template

	sessions *sessionStore
	lockout  *lockout.Lockout
	alerts   *alertTracker
	hub      *hub
	scan     *scanner

	// pinBudget is the PIN failure budget shared by every client, on top
	// of lockout's budget per client.
	pinBudget *lockout.Budget
	// devices are the browsers that signed in before, which a PIN pause
	// does not hold up (device.go).
	devices *deviceStore
	// peerLines bounds the log lines a browser can provoke at will
	// (docs/DESIGN.md, invariant 10); every such line goes through it.
	peerLines warnlimit.Limiter

	// pinMu serialises first-run setup and PIN checks: argon2id takes
	// 19 MiB per check, so checks run one at a time.
	pinMu sync.Mutex
	// wrongCodes counts wrong first-run setup codes from every client
	// (under pinMu); at SetupCodeSpendLimit the code is replaced.
	wrongCodes int

	streams atomic.Int32

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed sync.Once
}

var _ http.Handler = (*Page)(nil)

// New returns the manager page answering from b. It starts following b's
// changes at once; call Close when the listener is done.
func New(b Backend, opts Options) *Page {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Page{b: b, opts: opts, log: opts.Logger, now: opts.Now, mux: http.NewServeMux()}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.tmpl = mustTemplates()
	p.sessions = newSessionStore(p.now, maxSessions, sessionIdle, sessionMax)
	p.lockout = lockout.New(p.now, PINFailureLimit, PINFailureWindow, maxLockoutClients)
	p.pinBudget = lockout.NewBudget(p.now, pinBudgetLimits)
	p.peerLines.Now = p.now
	p.devices = newDeviceStore(p.opts.DataDir, p.now)
	p.hub = newHub()
	p.alerts = newAlertTracker(b, p.now, maxAlerts)
	p.scan = newScanner(p.ctx, b, &p.wg)
	p.routes()

	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.follow()
	}()
	return p
}

// Close stops the page's goroutines (the change follower, a running scan)
// and ends its open event streams; it waits for the goroutines it owns.
// The handler still answers afterwards, without live updates.
func (p *Page) Close() error {
	p.closed.Do(func() {
		p.cancel()
		p.wg.Wait()
	})
	return nil
}

// follow reads the backend's changes until the page closes: it updates
// the alerts, then tells every /events stream.
func (p *Page) follow() {
	ch := p.b.Subscribe(p.ctx)
	p.alerts.scan()
	for {
		select {
		case <-p.ctx.Done():
			// Drain until the backend closes the channel, so it never
			// blocks on us (it should not anyway).
			for range ch {
			}
			return
		case c, ok := <-ch:
			if !ok {
				return
			}
			p.alerts.apply(c)
			p.hub.publish(c)
		}
	}
}

func (p *Page) routes() {
	m := p.mux
	m.Handle("/static/", http.StripPrefix("/static/", p.staticHandler()))
	// The receipt-paper sheet comes from the package that draws the
	// previews, so classes and styles cannot drift apart.
	m.HandleFunc("GET /static/paper.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		io.WriteString(w, escpos.PaperCSS)
	})
	m.HandleFunc("GET /lang", p.setLang)
	m.HandleFunc("GET /setup", p.setupForm)
	m.HandleFunc("POST /setup", p.setupSubmit)
	m.HandleFunc("GET /login", p.loginForm)
	m.HandleFunc("POST /login", p.loginSubmit)
	m.HandleFunc("POST /logout", p.action(p.logout))

	m.HandleFunc("GET /{$}", p.dashboardOrFragment)
	m.HandleFunc("GET /events", p.stream(p.events))
	m.HandleFunc("POST /alerts/{id}/ack", p.action(p.ackAlert))

	m.HandleFunc("GET /tasks", p.page(p.taskList))
	m.HandleFunc("GET /tasks/{task_no}", p.page(p.taskPage))
	m.HandleFunc("GET /tasks/{task_no}/{action}", p.page(p.confirmPage))
	m.HandleFunc("POST /tasks/{task_no}/{action}", p.action(p.taskAction))

	m.HandleFunc("GET /printers", p.page(p.printersPage))
	m.HandleFunc("POST /printers/{name}/test", p.action(p.testPrint))
	m.HandleFunc("POST /printers/scan", p.action(p.startScan))
	m.HandleFunc("GET /printers/scan", p.stream(p.scanStream))
	m.HandleFunc("GET /printers/reload", p.page(p.reloadConfirm))
	m.HandleFunc("POST /printers/reload", p.action(p.reloadAction))
	m.HandleFunc("GET /printers/add", p.page(p.addConfirm))
	m.HandleFunc("POST /printers/add", p.action(p.addAction))
	m.HandleFunc("POST /printers/test-address", p.action(p.testAddress))

	m.HandleFunc("GET /pairing", p.page(p.pairingPage))
	m.HandleFunc("POST /pairing/unpair", p.action(p.unpair))

	m.HandleFunc("GET /logs", p.page(p.logsPage))
	m.HandleFunc("GET /logs/stream", p.stream(p.logStream))

	m.HandleFunc("/", p.notFound)
}

// ServeHTTP hands /api/, /healthz and /metrics to the API untouched and
// serves everything else as the page, with its security headers.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(r.URL.Path) {
		if p.opts.API == nil {
			http.NotFound(w, r)
			return
		}
		p.opts.API.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !strings.HasPrefix(r.URL.Path, "/static/") {
		h.Set("Cache-Control", "no-store")
	}
	p.mux.ServeHTTP(w, r)
}

// isAPIPath reports whether path belongs to the intake API's handler.
func isAPIPath(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/api" || path == "/healthz" || path == "/metrics"
}

func (p *Page) staticHandler() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Assets change with the binary; revalidate rather than cache
		// an old script across an upgrade.
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// view is what every page template gets.
type view struct {
	L       lang
	Title   string
	Nav     string // the nav entry to highlight
	Path    string // this page's path and query, for the language switch
	Authed  bool
	CSRF    string
	Flash   *flash
	Version string
	// Data is the page's own content.
	Data any
}

// newView starts the view of r for sess (nil when anonymous), taking the
// session's one-shot flash.
func (p *Page) newView(r *http.Request, sess *session, nav string) *view {
	v := &view{L: pickLang(r), Nav: nav, Path: r.URL.RequestURI(), Version: p.opts.Version}
	if sess != nil {
		v.Authed = true
		v.CSRF = sess.csrf
		v.Flash = p.sessions.takeFlash(sess)
	}
	return v
}

// render executes the named page into a buffer first, so a template error
// becomes a clean 500 rather than half a page.
func (p *Page) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	p.renderTemplate(w, r, status, name, "layout", v)
}

func (p *Page) renderTemplate(w http.ResponseWriter, r *http.Request, status int, name, tmpl string, v any) {
	t, ok := p.tmpl[name]
	if !ok {
		p.serverError(w, r, "problem.render", fmt.Errorf("no template %s", name))
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, v); err != nil {
		p.serverError(w, r, "problem.render", fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// serverError answers 500 with the error page: whatID (a catalog id) says
// what the page was doing, unless err has words of its own (a *Problem).
func (p *Page) serverError(w http.ResponseWriter, r *http.Request, whatID string, err error) {
	p.showProblem(w, r, http.StatusInternalServerError, whatID, err)
}

func (p *Page) notFound(w http.ResponseWriter, r *http.Request) {
	l := pickLang(r)
	p.showMessage(w, r, http.StatusNotFound, l.T("error.notfound"), message{Body: l.T("error.notfound.body")})
}

// message renders a page with a title and one paragraph (plus an optional
// command to run), for refusals and notices.
type message struct {
	Body    string
	Command string
	Error   bool
}

func (p *Page) showMessage(w http.ResponseWriter, r *http.Request, status int, title string, m message) {
	v := p.newView(r, p.sessions.get(r), "")
	v.Title = title
	v.Data = m
	p.render(w, r, status, "message.html", v)
}

// mergeDone returns a context that ends when a or b does.
func mergeDone(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}
