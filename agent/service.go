package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"printgate/agent/localapi"
	"printgate/agent/metrics"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// RunService is `printgate run`: it loads the config, opens the spool, starts
// the lanes and the local HTTP listener, and runs until ctx ends. Then it
// stops intake first, lets jobs in flight finish their completion barrier,
// and closes the spool. Console logs go to console.
func RunService(ctx context.Context, configPath string, console io.Writer) error {
	cfg, err := LoadConfig(configPath)
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
	sp, err := spool.Open(filepath.Join(cfg.DataDir, "spool.db"), spool.Options{
		MaxSize:        cfg.Spool.MaxSize,
		Retention:      cfg.Spool.Retention,
		DedupeWindow:   cfg.Spool.DedupeWindow,
		DefaultTimeout: cfg.Defaults.Timeout,
	})
	if err != nil {
		return err
	}
	defer sp.Close()
	if rerr := sp.Recovered(); rerr != nil {
		log.Error("SPOOL RECOVERED FROM CORRUPTION", "err", rerr)
	}
	m := metrics.New()
	a, err := New(cfg, sp, Options{Logger: log, Metrics: m})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (the config's listen): %w", cfg.Listen, err)
	}
	srv := &http.Server{
		Handler: localapi.New(a, localapi.Options{
			Token:         cfg.APIToken.Reveal(),
			MaxBodyBytes:  localapi.BodyLimit(1 << 20),
			Metrics:       m.Registry(),
			Logger:        log,
			CheckDocument: checkDocument,
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("printgate listening", "addr", ln.Addr().String(), "config", cfg.Path, "data_dir", cfg.DataDir)

	runCtx, cancelRun := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- a.Run(runCtx) }()
	go a.maintain(runCtx, sp)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		log.Error("http listener failed", "err", err)
	}
	// Intake first: no new task is accepted once the agent starts stopping.
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(shutCtx)
	cancel()
	cancelRun()
	if err := <-runDone; err != nil {
		return err
	}
	log.Info("printgate stopped")
	return nil
}

// checkDocument refuses at intake a ticket document the renderer would
// refuse, with its message naming the line.
func checkDocument(raw json.RawMessage) error {
	_, err := escpos.ParseDocument(raw)
	return err
}

// maintain applies retention every hour and compacts the spool when pruning
// freed a lot, so the file does not grow without bound.
func (a *Agent) maintain(ctx context.Context, sp *spool.Spool) {
	for {
		t := a.opts.Clock.NewTimer(time.Hour)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		st, err := sp.Prune(a.opts.Clock.Now())
		if err != nil {
			a.log.Error("spool retention failed", "err", err)
			continue
		}
		if st.Pruned+st.Expired >= 1000 {
			cs, err := sp.Compact()
			if err != nil && !errors.Is(err, spool.ErrClosed) {
				a.log.Error("spool compaction failed", "err", err)
				continue
			}
			a.log.Info("spool compacted", "pruned", st.Pruned, "expired", st.Expired, "before", cs.Before, "after", cs.After)
		}
	}
}
