// Package daemon is printgate's composition root: RunService builds the
// logger, the spool, the agent core, the listener and its TLS, the local
// API, the manager page, the cloud link and the SIGHUP reload, wires them
// together, and takes them down in order. Package agent holds the core
// (lanes, restore, failover, reload); this package holds only the wiring.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"printgate/agent"
	"printgate/agent/config"
	"printgate/agent/hostcheck"
	"printgate/agent/localapi"
	"printgate/agent/logring"
	"printgate/agent/metrics"
	"printgate/agent/tlscert"
	"printgate/agent/web"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// RunService is `printgate run`: it loads the config, opens the spool, starts
// the lanes, restores them from the spool and only then opens the local HTTP
// listener, and runs until ctx ends. Then it stops intake first, lets jobs in
// flight finish their completion barrier, and closes the spool. Console logs
// go to console.
//
// It returns an error, and `printgate run` exits non-zero so a service
// manager restarts it, when the core fails (restore cannot read the spool, a
// lane dies) or the listener fails. A core that fails while serving first
// answers intake with 503 and /healthz with "failed" for CoreFailLinger, so
// POS terminals and probes see why, then the process ends.
func RunService(ctx context.Context, configPath string, console io.Writer) error {
	return runService(ctx, configPath, console, nil)
}

// CoreFailLinger is how long a failed agent keeps answering 503 before it
// exits: long enough for a probe to see the failure, short enough that the
// service manager's restart is not delayed much.
var CoreFailLinger = 3 * time.Second

// ServiceOptions are what a caller other than `printgate run` changes in
// the service.
type ServiceOptions struct {
	// EmulatedOnly is the demo's: its printers are emulated, so the page
	// discovers no serial port or USB printer of this PC to offer (as
	// root, a demo offered the PC's own /dev/ttyS0).
	EmulatedOnly bool
}

// RunServiceWith is RunService with o.
func RunServiceWith(ctx context.Context, configPath string, console io.Writer, o ServiceOptions) error {
	return runServiceOpts(ctx, configPath, console, nil, o)
}

// runService is RunService with a hook that adjusts the agent's options, for
// tests that inject failures into the real service path.
func runService(ctx context.Context, configPath string, console io.Writer, tweak func(*agent.Options)) error {
	return runServiceOpts(ctx, configPath, console, tweak, ServiceOptions{})
}

func runServiceOpts(ctx context.Context, configPath string, console io.Writer, tweak func(*agent.Options), so ServiceOptions) error {
	hup, stopHup := catchReload()
	defer stopHup()
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	if err := checkDataDir(cfg); err != nil {
		return err
	}
	ring := logring.New(logring.Options{})
	log, logCloser, err := agent.NewLogger(cfg.Log, console, ring)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer logCloser.Close()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	guardSecrets(cfg, log)
	lim := spoolLimits(cfg)
	sp, err := spool.Open(filepath.Join(cfg.DataDir, "spool.db"), spoolOptionsWith(cfg, lim))
	if err != nil {
		return err
	}
	defer sp.Close()
	logSpoolLimits(cfg, lim, log)
	var ce *spool.CorruptError
	if errors.As(sp.Recovered(), &ce) {
		log.Error("SPOOL RECOVERED FROM CORRUPTION", "quarantined_file", ce.MovedTo, "salvaged", ce.Salvaged,
			"unreadable_records", ce.Unreadable, "err", ce)
	}
	warnBackups(cfg, log)
	if len(cfg.Printers) == 0 {
		log.Warn("no printers are configured: nothing can be printed until one is added (the manager page's Printers page, or a [[printers]] table in the config)", "config", cfg.Path)
	}
	m := metrics.New()
	// The page's live view hears what the agent reports.
	changes := &hub{}
	opts := agent.Options{Logger: log, Metrics: m, Ring: ring, Observe: changes.observe}
	if tweak != nil {
		tweak(&opts)
	}
	a, err := agent.New(cfg, sp, opts)
	if err != nil {
		return err
	}
	// The certificate first and then the port, so a bad certificate or a
	// port in use fails before anything runs; serve only once every lane
	// holds its backlog.
	tlsConf, fingerprint, err := listenerTLS(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return listenError(cfg, err)
	}
	defer ln.Close()

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	runDone := make(chan error, 1)
	go func() { runDone <- a.Run(runCtx) }()
	m.SetCoreUp(true)
	select {
	case <-a.Ready():
	case err := <-runDone:
		m.SetCoreUp(false)
		if err == nil {
			err = errors.New("agent core ended before it was ready")
		}
		log.Error("printgate could not start: the spool could not be restored", "err", err)
		return err
	case <-ctx.Done():
		cancelRun()
		if err := <-runDone; err != nil {
			return err
		}
		log.Info("printgate stopped before it was ready")
		return nil
	}

	api := localapi.New(a, localapi.Options{
		Token:        cfg.APIToken.Reveal(),
		MaxBodyBytes: localapi.BodyLimit(sp.MaxTaskBytes()),
		Metrics:      m.Registry(),
		Logger:       log,
		Tail:         a.Tail,
	})
	// The manager page shares the listener; it hands /api/, /healthz and
	// /metrics to the API untouched.
	page := web.New(pageBackend{Agent: a, changes: changes, emulatedOnly: so.EmulatedOnly}, web.Options{
		DataDir:    cfg.DataDir,
		TLS:        tlsConf != nil,
		Logger:     log.With("component", "page"),
		API:        api,
		Version:    Version,
		ConfigPath: cfg.Path,
	})
	defer page.Close()
	// The raw ports, like the API, take work only once every lane holds
	// its backlog, and open before the API answers: /healthz ok means they
	// are open too. One that cannot open stops the start, as listen would.
	if err := a.OpenRawPorts(); err != nil {
		log.Error("printgate could not start: a raw port could not be opened", "err", err)
		cancelRun()
		<-runDone
		return err
	}
	// While no PIN is set, the page asks for a one-time setup code that
	// only someone at this PC sees; made before the first request.
	setupAt, browserSetup := setupURL(ln.Addr(), tlsConf != nil)
	setupCode := ""
	if browserSetup {
		if setupCode, err = web.PrepareSetup(cfg.DataDir); err != nil {
			log.Error("the first-run setup code could not be written; set the manager PIN with printgate pin set instead", "err", err)
		}
	} else if err := web.RemoveSetupCode(cfg.DataDir); err != nil {
		log.Warn("a stale first-run setup code could not be removed", "err", err)
	}
	// Every request passes the Host and Origin checks first, API included:
	// a page whose name an attacker points at this PC must get nothing.
	guard := hostcheck.New(page, hostcheck.Options{
		Addr:   ln.Addr(),
		Names:  listenerNames(cfg, tlsConf),
		Logger: log,
	})
	srv := localapi.NewServer(guard, localapi.ServerTimeouts{}, log)
	// Connections are bounded per client and in total: idle kept-alive
	// ones are closed first, new ones wait (PROTOCOL.md §8).
	conns := localapi.LimitConns(ln, localapi.ConnLimits{Logger: log})
	defer conns.Close()
	srv.ConnState = conns.ConnState
	serveErr := make(chan error, 1)
	mode := "off"
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		mode = "file"
		if cfg.TLS.SelfSigned {
			mode = "self-signed"
		}
		go func() { serveErr <- srv.ServeTLS(conns, "", "") }()
	} else {
		go func() { serveErr <- srv.Serve(conns) }()
	}
	attrs := []any{"addr", ln.Addr().String(), "tls", mode, "config", cfg.Path, "data_dir", cfg.DataDir}
	if fingerprint != "" {
		attrs = append(attrs, "tls_fingerprint", fingerprint)
	}
	log.Info("printgate listening", attrs...)
	if setupCode != "" {
		// Out of the log ring: no remote or page log tail may carry it.
		log.WarnContext(logring.LocalOnly(ctx), fmt.Sprintf("first-run setup code: %s (open %s and type it; it is also in printgate status)", setupCode, setupAt))
	}
	if tlsConf == nil && !loopbackOnly(ln.Addr()) {
		log.Warn("the local API is open to the network without TLS: the token crosses the shop's Wi-Fi in clear; set tls = \"self-signed\" in the config", "addr", ln.Addr().String())
	}
	linkDone := make(chan struct{})
	if cfg.Cloud != nil {
		lk, err := newLink(cfg, a, sp, ring, log)
		if err != nil {
			log.Error("the cloud link cannot start; the store keeps printing locally", "err", err)
			close(linkDone)
		} else {
			// The one place the link is wired: the agent tells it of
			// changes and its views read it from here on.
			a.AttachLink(lk)
			go func() { defer close(linkDone); lk.Run(runCtx) }()
		}
	} else {
		close(linkDone)
	}
	maintDone := make(chan struct{})
	go func() { defer close(maintDone); a.Maintain(runCtx, sp) }()
	// SIGHUP reloads the config (unix), only once serving: a reload needs a
	// restored agent. One sent earlier was caught and waits in hup.
	hupDone := make(chan struct{})
	go func() { defer close(hupDone); watchReload(runCtx, a, hup, log) }()

	var failure error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		failure = fmt.Errorf("http listener on %s failed: %w", ln.Addr(), err)
		log.Error("printgate stopping: the http listener failed", "err", err)
	case err := <-runDone:
		runDone <- err // read again below
		m.SetCoreUp(false)
		failure = a.Failed()
		if failure == nil {
			failure = errors.New("agent core stopped unexpectedly")
		}
		log.Error("printgate stopping: the agent core failed; intake answers 503 until exit", "err", failure, "linger", CoreFailLinger)
		linger := time.NewTimer(CoreFailLinger)
		select {
		case <-linger.C:
		case <-ctx.Done():
			linger.Stop()
		}
	}
	// Intake first: no new task is accepted once the agent starts stopping.
	// The raw ports close (a job mid-stream is reset, not half-taken); the
	// page's live streams end first: Shutdown waits for open requests, and
	// an event stream never ends on its own.
	a.CloseRawPorts()
	page.Close()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(shutCtx)
	cancel()
	cancelRun()
	<-maintDone
	<-hupDone
	<-linkDone
	if err := <-runDone; err != nil && failure == nil {
		failure = err
	}
	if failure != nil {
		log.Error("printgate stopped on a failure", "err", failure)
		return failure
	}
	log.Info("printgate stopped")
	return nil
}

// listenerTLS loads or makes the listener's certificate as the config asks;
// nil without TLS. The fingerprint is what a POS pins (PROTOCOL.md §3).
func listenerTLS(cfg *config.Config) (*tls.Config, string, error) {
	var cert tls.Certificate
	var fp string
	var err error
	switch {
	case cfg.TLS.SelfSigned:
		hosts := append([]string(nil), cfg.TLS.Hosts...)
		if host, _, err := net.SplitHostPort(cfg.Listen); err == nil && host != "" {
			if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
				hosts = append(hosts, host)
			}
		}
		if name, err := os.Hostname(); err == nil && name != "" {
			hosts = append(hosts, name)
		}
		cert, fp, err = tlscert.SelfSigned(cfg.DataDir, hosts, time.Now())
	case cfg.TLS.Cert != "":
		cert, fp, err = tlscert.LoadPair(cfg.TLS.Cert, cfg.TLS.Key)
	default:
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("tls for the local listener: %w", err)
	}
	return tlscert.ServerConfig(cert), fp, nil
}

// listenerNames are the names and addresses, besides loopback and this
// computer's own, that a client may call the listener by: allowed_hosts,
// tls_hosts and the names the listener's certificate carries (a POS that
// trusts the certificate calls the agent by one of them).
func listenerNames(cfg *config.Config, tlsConf *tls.Config) []string {
	names := append(append([]string(nil), cfg.AllowedHosts...), cfg.TLS.Hosts...)
	if tlsConf != nil {
		for _, c := range tlsConf.Certificates {
			if c.Leaf == nil {
				continue
			}
			names = append(names, c.Leaf.DNSNames...)
			for _, ip := range c.Leaf.IPAddresses {
				names = append(names, ip.String())
			}
		}
	}
	return names
}

// setupURL is where a browser on this PC opens first-run setup, and false
// when it cannot: setup takes only a loopback client, and a listener bound
// to a LAN address is reached from this PC through that address.
func setupURL(addr net.Addr, tls bool) (string, bool) {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || !(ta.IP.IsLoopback() || ta.IP.IsUnspecified()) {
		return "", false
	}
	scheme, host := "http", "127.0.0.1"
	if tls {
		scheme = "https"
	}
	if ta.IP.IsLoopback() {
		host = ta.IP.String()
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(ta.Port)) + "/setup", true
}

// loopbackOnly reports whether addr can only be reached from this computer.
func loopbackOnly(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// warnBackups says at start, one WARN line each, what a backup printer
// cannot print that its primary can (another encoding, narrower paper, no
// cutter...): failover would otherwise be the moment the store finds out.
func warnBackups(cfg *config.Config, log *slog.Logger) {
	for i := range cfg.Printers {
		pc := &cfg.Printers[i]
		if pc.Backup == "" {
			continue
		}
		b, ok := cfg.Printer(pc.Backup)
		if !ok {
			continue
		}
		for _, why := range escpos.CompareProfiles(pc.Profile, b.Profile) {
			log.Warn("backup printer cannot print everything its primary can", "printer", pc.Name, "backup", b.Name, "shortfall", why)
		}
	}
}

// spoolLimits works out the spool's cap and the disk space it keeps free:
// the config's, or the defaults from the size of data_dir's file system.
func spoolLimits(cfg *config.Config) spool.Limits {
	return spool.PlanLimits(cfg.DataDir, cfg.Spool.MaxSize, cfg.Spool.KeepFree)
}

// logSpoolLimits says at start how big the spool may grow and why, and
// what each door may hold of it: "spool cap 1 GiB (default: 10% of the
// 200 GiB file system holding /var/lib/printgate, ceiling 1 GiB)".
func logSpoolLimits(cfg *config.Config, lim spool.Limits, log *slog.Logger) {
	attrs := []any{"cap_bytes", lim.Cap, "keep_free", spool.FormatSize(lim.KeepFree)}
	for _, d := range config.Doors {
		q := cfg.Spool.Quota[d]
		attrs = append(attrs, config.QuotaKey(d), fmt.Sprintf("%s (%s)", q.String(), spool.FormatSize(q.Of(lim.Cap))), config.RateKey(d), cfg.Spool.Rate[d])
	}
	log.Info(fmt.Sprintf("spool cap %s (%s)", spool.FormatSize(lim.Cap), lim.Why()), attrs...)
}

// spoolOptions maps the config onto the spool's options (spoolOptionsWith
// the limits of spoolLimits).
func spoolOptions(cfg *config.Config) spool.Options {
	return spoolOptionsWith(cfg, spoolLimits(cfg))
}

// spoolOptionsWith maps the config and the spool's limits onto the spool's
// options. Without a [cloud] table nothing would ever read the outbox, so
// none is written.
func spoolOptionsWith(cfg *config.Config, lim spool.Limits) spool.Options {
	o := spool.Options{
		MaxSize:        lim.Cap,
		KeepFree:       lim.KeepFree,
		Quotas:         agent.SpoolQuotas(cfg.Spool, lim.Cap),
		Retention:      cfg.Spool.Retention,
		DedupeWindow:   cfg.Spool.DedupeWindow,
		DefaultTimeout: cfg.Defaults.Timeout,
		Outbox:         spool.OutboxOptions{Disabled: true},
	}
	if c := cfg.Cloud; c != nil {
		o.Outbox = spool.OutboxOptions{MaxEvents: c.OutboxMaxEvents, MaxAge: c.OutboxMaxAge}
	}
	return o
}
