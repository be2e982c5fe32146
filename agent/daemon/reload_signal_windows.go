package daemon

import (
	"context"
	"log/slog"
	"os"

	"printgate/agent"
)

// catchReload catches nothing on Windows, which has no SIGHUP: `printgate
// reload` and the manager page reload the config there.
func catchReload() (<-chan os.Signal, func()) { return nil, func() {} }

// watchReload does nothing on Windows (see catchReload).
func watchReload(ctx context.Context, a *agent.Agent, hup <-chan os.Signal, log *slog.Logger) {}
