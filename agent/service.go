package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"printgate/agent/config"
	"printgate/agent/localapi"
	"printgate/agent/metrics"
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

// runService is RunService with a hook that adjusts the agent's options, for
// tests that inject failures into the real service path.
func runService(ctx context.Context, configPath string, console io.Writer, tweak func(*Options)) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	log, logCloser, err := NewLogger(cfg.Log, console)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer logCloser.Close()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	sp, err := spool.Open(filepath.Join(cfg.DataDir, "spool.db"), spoolOptions(cfg))
	if err != nil {
		return err
	}
	defer sp.Close()
	var ce *spool.CorruptError
	if errors.As(sp.Recovered(), &ce) {
		log.Error("SPOOL RECOVERED FROM CORRUPTION", "quarantined_file", ce.MovedTo, "salvaged", ce.Salvaged,
			"unreadable_records", ce.Unreadable, "err", ce)
	}
	warnBackups(cfg, log)
	m := metrics.New()
	opts := Options{Logger: log, Metrics: m}
	if tweak != nil {
		tweak(&opts)
	}
	a, err := New(cfg, sp, opts)
	if err != nil {
		return err
	}
	// Bind first, so a port in use fails before anything runs; serve only
	// once every lane holds its backlog.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (the config's listen): %w", cfg.Listen, err)
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

	srv := &http.Server{
		Handler: localapi.New(a, localapi.Options{
			Token:        cfg.APIToken.Reveal(),
			MaxBodyBytes: localapi.BodyLimit(1 << 20),
			Metrics:      m.Registry(),
			Logger:       log,
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("printgate listening", "addr", ln.Addr().String(), "config", cfg.Path, "data_dir", cfg.DataDir)
	maintDone := make(chan struct{})
	go func() { defer close(maintDone); a.maintain(runCtx, sp) }()

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
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(shutCtx)
	cancel()
	cancelRun()
	<-maintDone
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

// spoolOptions maps the config onto the spool's options. Without a [cloud]
// table nothing would ever read the outbox, so none is written.
func spoolOptions(cfg *config.Config) spool.Options {
	o := spool.Options{
		MaxSize:        cfg.Spool.MaxSize,
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
