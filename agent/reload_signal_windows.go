package agent

import "context"

// watchReload does nothing on Windows, which has no SIGHUP: `printgate
// reload` and the manager page reload the config there.
func watchReload(ctx context.Context, a *Agent) {}
