package cloudcheck

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"printgate/internal/clock"
	"printgate/internal/loopback"
)

// Names lists every check, in the order a Report holds them.
var Names = []string{
	"handshake.subprotocol",
	"handshake.token",
	"handshake.welcome",
	"handshake.ping",
	"jobs.ack_after_fsync",
	"jobs.lost_ack_duplicate",
	"jobs.rejected",
	"events.order",
	"events.ack",
	"events.dedupe",
	"events.gap",
	"events.lives",
	"commands.reprint",
	"commands.cancel",
	"commands.logs",
	"commands.revoke",
	"pairing.device_code",
	"pairing.interval",
	"pairing.slow_down",
	"pairing.approve",
	"pairing.expired_token",
	"pairing.access_denied",
}

// Defaults of Options.
const (
	DefaultPingWait = 25 * time.Second // one cloud ping (every 20 s) and slack
	DefaultQuiet    = 3 * time.Second  // watch for what must not happen
	DefaultStep     = 15 * time.Second // wait for what must happen
)

// Options say which cloud to check and how.
type Options struct {
	// CloudURL is the cloud's agent websocket, as in the agent's [cloud]
	// url: wss://, or ws:// to a loopback host.
	CloudURL string
	// AuthURL is the device flow's base (the agent's [cloud] auth_url):
	// POST {AuthURL}/device/code and {AuthURL}/token. Empty skips the
	// pairing checks.
	AuthURL string
	// TestAPI is the base URL of the cloud's test API (PROTOCOL.md §7);
	// empty: the origin of CloudURL (http for ws, https for wss). A cloud
	// that does not answer GET {TestAPI}/api/agents has none, and the
	// checks that need it are skipped with the reason.
	TestAPI string
	// NoTestAPI skips every use of the test API, as against a cloud that
	// has none.
	NoTestAPI bool
	// Token and AgentID are a device token the cloud accepts for that
	// agent id, for a cloud without a test API to issue tokens: the
	// handshake and events checks then run as that one agent.
	Token, AgentID string
	// RootCAs verify a wss:// cloud and https:// endpoints; nil: the
	// system's roots.
	RootCAs *x509.CertPool
	// HTTPClient makes the device flow and test API requests; nil: one with
	// RootCAs and a 15 s timeout.
	HTTPClient *http.Client
	// Clock times every wait of the checks and of the played agents'
	// links; nil: the real clock. Tests pass one that runs faster.
	Clock clock.Clock
	// Logger receives the played agents' own logs; nil: discarded.
	Logger *slog.Logger
	// Version is the played agents' version in hello; empty: "cloudcheck".
	Version string
	// PingWait is how long one connection is watched for the cloud's
	// pings; 0: DefaultPingWait.
	PingWait time.Duration
	// Quiet is how long a check watches for something that must not
	// happen (a resend, a reconnect); 0: DefaultQuiet.
	Quiet time.Duration
	// Step bounds the wait for each thing that must happen; 0:
	// DefaultStep.
	Step time.Duration
	// Only, when set, runs only the checks with these names or in these
	// groups ("events"); the others are left out of the report.
	Only []string
}

// checker is one run.
type checker struct {
	ctx   context.Context // the run's: once done, a failing check is a skip
	opts  Options
	clock clock.Clock
	log   *slog.Logger
	http  *http.Client
	runID string
	dir   string
	api   *testAPI // nil: the cloud has no test API
	// noAPI says why api is nil.
	noAPI string

	mu      sync.Mutex
	players []*player
	// offline, once set, says why the handshake's agent never got
	// online: the later groups skip at once instead of waiting as long.
	offline string
}

// Run plays agents against the cloud of opts and returns every check's
// verdict. It fails only when opts cannot be used (a bad URL); whatever
// the cloud does is in the Report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := checkURL(opts.CloudURL, "ws", "wss"); err != nil {
		return nil, err
	}
	if opts.AuthURL != "" {
		if err := checkURL(opts.AuthURL, "http", "https"); err != nil {
			return nil, err
		}
	}
	if opts.TestAPI != "" {
		if err := checkURL(opts.TestAPI, "http", "https"); err != nil {
			return nil, err
		}
	}
	if (opts.Token == "") != (opts.AgentID == "") {
		return nil, errors.New("cloudcheck: a token and an agent id go together: give both or neither")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "cloudcheck"
	}
	if opts.PingWait <= 0 {
		opts.PingWait = DefaultPingWait
	}
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.Step <= 0 {
		opts.Step = DefaultStep
	}
	ch := &checker{ctx: ctx, opts: opts, clock: opts.Clock, log: opts.Logger, http: opts.HTTPClient}
	if ch.http == nil {
		ch.http = httpClient(opts.RootCAs)
	}
	var r [4]byte
	rand.Read(r[:])
	ch.runID = "cloudcheck-" + hex.EncodeToString(r[:])
	dir, err := os.MkdirTemp("", "printgate-cloudcheck-")
	if err != nil {
		return nil, fmt.Errorf("cloudcheck: temporary directory for the agents' spools: %w", err)
	}
	ch.dir = dir
	defer os.RemoveAll(dir)

	rep := &Report{Cloud: opts.CloudURL, AuthURL: opts.AuthURL, Started: time.Now().UTC()}
	ch.findTestAPI(ctx)
	if ch.api != nil {
		rep.TestAPI = ch.api.base
	}

	results := map[string]Result{}
	var rmu sync.Mutex
	collect := func(rs []Result) {
		rmu.Lock()
		defer rmu.Unlock()
		for _, r := range rs {
			results[r.Name] = r
		}
	}
	// Pairing is HTTP only and mostly waiting for poll intervals: it runs
	// beside the websocket groups, which run one after another.
	var wg sync.WaitGroup
	if ch.wanted("pairing") {
		wg.Add(1)
		go func() {
			defer wg.Done()
			collect(ch.pairing(ctx))
		}()
	}
	for _, g := range []struct {
		name string
		run  func(context.Context) []Result
	}{
		{"handshake", ch.handshake},
		{"jobs", ch.jobs},
		{"events", ch.events},
		{"commands", ch.commands},
	} {
		if !ch.wanted(g.name) {
			continue
		}
		if why := ch.offlineReason(); why != "" && g.name != "handshake" {
			collect(ch.skipAll(groupNames(g.name), why))
			continue
		}
		collect(g.run(ctx))
	}
	wg.Wait()
	ch.closePlayers()

	for _, n := range Names {
		if !ch.wanted(n) {
			continue
		}
		r, ok := results[n]
		if !ok {
			r = Result{Name: n, Status: Skip, Seen: "not run"}
		}
		if ctx.Err() != nil && !ok {
			r.Seen = "not run: interrupted"
		}
		rep.Checks = append(rep.Checks, r)
	}
	rep.count()
	return rep, nil
}

func (ch *checker) offlineReason() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.offline
}

func (ch *checker) setOffline(why string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.offline = why
}

// groupNames lists the checks of a group.
func groupNames(group string) []string {
	var out []string
	for _, n := range Names {
		if strings.HasPrefix(n, group+".") {
			out = append(out, n)
		}
	}
	return out
}

// wanted reports whether the check or group name is to run.
func (ch *checker) wanted(name string) bool {
	if len(ch.opts.Only) == 0 {
		return true
	}
	group, _, _ := strings.Cut(name, ".")
	for _, o := range ch.opts.Only {
		if o == name || o == group || strings.HasPrefix(o, name+".") {
			return true
		}
	}
	return false
}

func (ch *checker) closePlayers() {
	ch.mu.Lock()
	list := ch.players
	ch.players = nil
	ch.mu.Unlock()
	for _, p := range list {
		p.close()
	}
}

// findTestAPI sets ch.api when the cloud answers the test API's probe.
func (ch *checker) findTestAPI(ctx context.Context) {
	if ch.opts.NoTestAPI {
		ch.noAPI = "the test API is off (--no-test-api)"
		return
	}
	base := ch.opts.TestAPI
	if base == "" {
		u, _ := url.Parse(ch.opts.CloudURL)
		scheme := "http"
		if u.Scheme == "wss" {
			scheme = "https"
		}
		base = scheme + "://" + u.Host
	}
	base = strings.TrimRight(base, "/")
	a := &testAPI{base: base, client: ch.http}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.probe(pctx); err != nil {
		ch.noAPI = fmt.Sprintf("the cloud has no test API (PROTOCOL §7) at %s (%v)", base, err)
		return
	}
	ch.api = a
}

// needAPI is the reason a check that drives or reads the cloud is skipped,
// or "" when the test API is there.
func (ch *checker) needAPI(what string) string {
	if ch.api != nil {
		return ""
	}
	return "needs the test API to " + what + ": " + ch.noAPI
}

// tokenFor gets a device token for a new agent: from the test API, else
// the one of Options (for every player: a cloud without a test API is
// checked as one agent).
func (ch *checker) tokenFor(ctx context.Context, p *player) (string, error) {
	if ch.api != nil {
		return ch.api.token(ctx, p.id)
	}
	if ch.opts.Token != "" {
		return ch.opts.Token, nil
	}
	return "", errors.New("no device token: " + ch.noAPI + ", and no --token was given")
}

// agent makes a player for role, with its token; the error is a skip
// reason.
func (ch *checker) agent(ctx context.Context, role string) (*player, string, error) {
	p, err := ch.newPlayer(role)
	if err != nil {
		return nil, "", err
	}
	tok, err := ch.tokenFor(ctx, p)
	if err != nil {
		return nil, "", err
	}
	return p, tok, nil
}

// sleep waits d on the clock, or until ctx is done.
func (ch *checker) sleep(ctx context.Context, d time.Duration) {
	t := ch.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// tick is how often a wait looks again at what it cannot be woken for
// (the test API).
const tick = 250 * time.Millisecond

// until waits up to d for cond, looking again at every tick and whenever
// rec (if any) sees something; it reports whether cond held.
func (ch *checker) until(ctx context.Context, d time.Duration, rec *recorder, cond func() bool) bool {
	end := ch.clock.Now().Add(d)
	for {
		var wake <-chan struct{}
		if rec != nil {
			wake = rec.wake()
		}
		if cond() {
			return true
		}
		left := end.Sub(ch.clock.Now())
		if left <= 0 || ctx.Err() != nil {
			return false
		}
		t := ch.clock.NewTimer(min(left, tick))
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-wake:
		}
		t.Stop()
	}
}

// checkURL accepts the schemes given, and the insecure one (ws, http) only
// to a loopback host, as the agent does: a device token must not cross a
// network in clear.
func checkURL(raw string, insecure, secure string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("cloudcheck: %q is not a URL like %s://cloud.example.com/agent", raw, secure)
	}
	switch u.Scheme {
	case secure:
		return nil
	case insecure:
		if loopback.Host(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("cloudcheck: %q is %s:// (no TLS) to a host that is not loopback; use %s://", raw, insecure, secure)
	}
	return fmt.Errorf("cloudcheck: %q: the scheme must be %s (or %s to a loopback host)", raw, secure, insecure)
}
