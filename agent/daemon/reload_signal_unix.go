//go:build !windows

package daemon

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"printgate/agent"
)

// catchReload starts catching SIGHUP, the way daemons are told to re-read
// their config, and returns the channel watchReload reads and a func that
// stops the catching. It is called first thing at start: SIGHUP's default
// action ends the process, so one sent while the spool is still being
// restored (systemctl reload right after start) must be held, not fatal.
func catchReload() (<-chan os.Signal, func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// watchReload reloads the config on each SIGHUP caught by catchReload
// until ctx ends. It runs only once the agent serves: a reload needs a
// restored agent, and a SIGHUP from before then is waiting in hup.
// Windows has no SIGHUP: there `printgate reload` and the page do it.
func watchReload(ctx context.Context, a *agent.Agent, hup <-chan os.Signal, log *slog.Logger) {
	for {
		select {
		case <-hup:
			res, err := a.Reload(ctx)
			if err != nil {
				// Reload logged the refusal and its errors.
				continue
			}
			log.Info("config reloaded on SIGHUP", "added", res.Added, "changed", res.Changed, "removed", res.Removed, "restart_needed", res.RestartNeeded)
		case <-ctx.Done():
			return
		}
	}
}
