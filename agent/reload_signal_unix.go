//go:build !windows

package agent

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// watchReload reloads the config on each SIGHUP until ctx ends, the way
// daemons are told to re-read their config. Windows has no SIGHUP: there
// `printgate reload` and the page do it.
func watchReload(ctx context.Context, a *Agent) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			res, err := a.Reload(ctx)
			if err != nil {
				// Reload logged the refusal and its errors.
				continue
			}
			a.log.Info("config reloaded on SIGHUP", "added", res.Added, "changed", res.Changed, "removed", res.Removed, "restart_needed", res.RestartNeeded)
		case <-ctx.Done():
			return
		}
	}
}
