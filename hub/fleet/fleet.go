package fleet

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"printgate/hub/agentlink"
	"printgate/hub/api"
	"printgate/hub/store"
	"printgate/internal/clock"
	"printgate/internal/warnlimit"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the page lives on the hub's listener.
const Prefix = "/fleet"

// PairPath is the approval page: the verification_uri of the device flow
// (hub/pairing), which the agent shows as a QR with ?user_code=.
const PairPath = Prefix + "/pair"

// requestTimeout bounds the store's work for one request.
const requestTimeout = 15 * time.Second

// maxFormBytes caps a form body.
const maxFormBytes = 16 << 10

// Status is what the page asks of the agents' link (agentlink.Server).
type Status interface {
	// Status is what this node knows of the store's agent.
	Status(store string) (agentlink.AgentStatus, bool)
}

// Actions are the order API's actions the page's buttons take, so a
// manager's reprint, cancel or approval goes the API's way (api.API).
type Actions interface {
	// Command sends a reprint or cancel under the caller's id.
	Command(ctx context.Context, st store.StoreInfo, typ, taskNo, id string) (store.Command, api.CommandOutcome, error)
	// DecidePairing approves or refuses a pairing code for the store.
	DecidePairing(ctx context.Context, st store.StoreInfo, code string, approve bool) error
	// OpenTail starts a log tail of the store's agent within the API's
	// bounds.
	OpenTail(st store.StoreInfo, opts agentlink.TailOptions) (*api.LogTail, error)
}

var (
	_ Status  = (*agentlink.Server)(nil)
	_ Actions = (*api.API)(nil)
)

// Options configure the page.
type Options struct {
	// Link tells which stores' agents are online (nil: none are).
	Link Status
	// Actions run reprint, cancel and pairing decisions. Required.
	Actions Actions
	// TLS marks the session cookie Secure: set it when the listener
	// serves HTTPS.
	TLS bool
	// Hosts are the names and addresses the page answers for besides
	// loopback names (the listener's address, its certificate's names,
	// allowed_hosts); any other Host is 421.
	Hosts []string
	// Clock is the clock of sessions and throttles (default the real one).
	Clock clock.Clock
	// Logger receives sign-ins, throttles and failures (default
	// slog.Default()). Passwords and session ids are never logged.
	Logger *slog.Logger
}

// Page is the fleet page, an http.Handler for the paths under Prefix.
type Page struct {
	st    *store.Store
	opts  Options
	log   *slog.Logger
	now   func() time.Time
	mux   *http.ServeMux
	tmpl  map[string]*template.Template
	hosts hostCheck
	cross *http.CrossOriginProtection

	sessions *sessionStore
	// byAddr and byUser count wrong passwords per client address and per
	// tenant user.
	byAddr, byUser *throttle
	// checkMu runs password checks one at a time: argon2id takes 19 MiB
	// each.
	checkMu sync.Mutex
	// peerLines bounds the log lines a browser can provoke.
	peerLines warnlimit.Limiter
	// views caches each tenant's fleet for a few seconds, so that many
	// phones polling cost one read of the record.
	views viewCache
	// index holds the jobs that need someone of the stores looked at,
	// kept up to date by stopWatch's watch of the record.
	index     jobIndex
	stopWatch func()
}

var _ http.Handler = (*Page)(nil)

// New returns the fleet page over st. It watches the record for changed
// jobs until Close.
func New(st *store.Store, opts Options) *Page {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Page{st: st, opts: opts, log: opts.Logger, now: opts.Clock.Now, mux: http.NewServeMux(),
		cross: http.NewCrossOriginProtection()}
	p.tmpl = mustTemplates()
	p.hosts = newHostCheck(opts.Hosts)
	p.sessions = newSessionStore(p.now, maxSessions, sessionIdle, sessionMax)
	p.byAddr = newThrottle(p.now, wrongLimit, wrongWindow, maxThrottled)
	p.byUser = newThrottle(p.now, wrongLimit, wrongWindow, maxThrottled)
	p.peerLines.Now = p.now
	p.views.now = p.now
	if stop, err := st.WatchTasks(p.index.changed); err != nil {
		p.log.Warn("fleet page: cannot watch the jobs; every fleet read scans the stores' jobs in full", "err", err)
	} else {
		p.index.watching, p.stopWatch = true, stop
	}
	p.routes()
	return p
}

// Close stops the page's watch of the record. The page still answers
// afterwards, scanning the stores' jobs at every read.
func (p *Page) Close() error {
	p.index.mu.Lock()
	stop := p.stopWatch
	p.stopWatch, p.index.watching = nil, false
	p.index.mu.Unlock()
	if stop != nil {
		stop()
	}
	return nil
}

func (p *Page) routes() {
	m := p.mux
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	m.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", http.FileServerFS(sub)))
	m.HandleFunc("GET "+Prefix+"/lang", p.setLang)
	m.HandleFunc("GET "+Prefix+"/login", p.loginForm)
	m.HandleFunc("POST "+Prefix+"/login", p.loginSubmit)
	m.HandleFunc("POST "+Prefix+"/logout", p.action(p.logout))
	m.HandleFunc("GET "+Prefix+"/{$}", p.page(p.fleetPage))
	m.HandleFunc("GET "+Prefix+"/fragment", p.script(p.fleetFragment))
	m.HandleFunc("GET "+Prefix+"/stores/{store}/jobs/{task_no}", p.page(p.jobPage))
	m.HandleFunc("POST "+Prefix+"/stores/{store}/jobs/{task_no}/{action}", p.action(p.jobAction))
	m.HandleFunc("GET "+PairPath, p.page(p.pairPage))
	m.HandleFunc("POST "+PairPath, p.action(p.pairSubmit))
	m.HandleFunc("GET "+Prefix+"/stores/{store}/logs", p.page(p.logsPage))
	m.HandleFunc("GET "+Prefix+"/stores/{store}/logs/stream", p.script(p.logsStream))
	m.HandleFunc(Prefix+"/", p.notFound)
}

// ServeHTTP checks the Host and, for a POST, that the browser sent it from
// this page, then serves the page with its security headers.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.hosts.allowed(r.Host) {
		host := shorten(hostOnly(r.Host))
		p.peerLines.Warn(p.log, "fleet page: refused a request for a host this hub does not answer for (421); if people open the page by this name, add it to allowed_hosts",
			"host", host, "client", r.RemoteAddr)
		plain(w, http.StatusMisdirectedRequest, fmt.Sprintf("printgate-hub does not answer for the name %q. Open the fleet page by the hub's own name; if %q is its name, add it to allowed_hosts in the hub's config and restart it.", host, host))
		return
	}
	if err := p.cross.Check(r); err != nil {
		p.peerLines.Warn(p.log, "fleet page: refused a POST a page of another site sent through a browser (403)",
			"origin", shorten(r.Header.Get("Origin")), "client", r.RemoteAddr)
		plain(w, http.StatusForbidden, "A page of another site sent this request through your browser, and the fleet page takes actions only from its own pages. Open the fleet page itself and do it there.")
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if strings.HasPrefix(r.URL.Path, Prefix+"/static/") {
		h.Set("Cache-Control", "no-cache")
	} else {
		h.Set("Cache-Control", "no-store")
	}
	p.mux.ServeHTTP(w, r)
}

// plain answers a refusal as text, for a person's browser.
func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// shorten cuts a value a client chose to a length fit for a message.
func shorten(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}

func mustTemplates() map[string]*template.Template {
	pages, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, pg := range pages {
		name := strings.TrimPrefix(pg, "templates/")
		if name == "layout.html" {
			continue
		}
		t := template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", pg))
		out[name] = t
	}
	return out
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}

// view is what every page template gets.
type view struct {
	L      lang
	Title  string
	Path   string
	Authed bool
	User   string
	Tenant string
	CSRF   string
	Flash  *flash
	Data   any
}

func (p *Page) newView(r *http.Request, sess *session) *view {
	v := &view{L: pickLang(r), Path: r.URL.RequestURI()}
	if sess != nil {
		v.Authed, v.User, v.Tenant, v.CSRF = true, sess.user, sess.tenant, sess.csrf
		v.Flash = p.sessions.takeFlash(sess)
	}
	return v
}

// render executes the named page into a buffer first, so a template error
// is a clean 500 rather than half a page.
func (p *Page) render(w http.ResponseWriter, status int, name, tmpl string, v any) {
	t, ok := p.tmpl[name]
	if !ok {
		p.log.Error("fleet page: no template", "name", name)
		plain(w, http.StatusInternalServerError, "The fleet page failed to draw; the cause is in the hub's log.")
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, v); err != nil {
		p.log.Error("fleet page: render", "name", name, "err", err)
		plain(w, http.StatusInternalServerError, "The fleet page failed to draw; the cause is in the hub's log.")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// message is a page with a title and one paragraph.
type message struct {
	Body  string
	Error bool
	Link  string
	// LinkText is the words of Link.
	LinkText string
}

func (p *Page) showMessage(w http.ResponseWriter, r *http.Request, sess *session, status int, title string, m message) {
	v := p.newView(r, sess)
	v.Title = title
	v.Data = m
	p.render(w, status, "message.html", "layout", v)
}

func (p *Page) notFound(w http.ResponseWriter, r *http.Request) {
	l := pickLang(r)
	p.showMessage(w, r, p.sessions.get(r), http.StatusNotFound, l.T("notfound.title"), message{Body: l.T("notfound.body"), Link: Prefix + "/", LinkText: l.T("nav.fleet")})
}

// serverError answers 500 saying what the page was doing (a catalog id)
// and logs the cause.
func (p *Page) serverError(w http.ResponseWriter, r *http.Request, sess *session, whatID string, err error) {
	p.log.Error("fleet page: "+whatID, "err", err)
	l := pickLang(r)
	p.showMessage(w, r, sess, http.StatusInternalServerError, l.T("error.title"), message{Body: l.T("error.body", l.T(whatID)), Error: true})
}
