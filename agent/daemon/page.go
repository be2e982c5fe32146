package daemon

import (
	"context"

	"printgate/agent"
	"printgate/agent/lanescan"
	"printgate/agent/web"
	"printgate/drivers"
)

// pageBackend is the manager page's backend: the agent's intake and views,
// plus the LAN scan and discovery, which need nothing of the core.
type pageBackend struct {
	*agent.Agent
}

var _ web.Backend = pageBackend{}

// Discover lists serial ports and USB printers on this PC.
func (b pageBackend) Discover() ([]drivers.Found, error) { return lanescan.Discover() }

// Scan looks for port-9100 printers on cidr, or on this PC's own IPv4
// networks.
func (b pageBackend) Scan(ctx context.Context, cidr string, progress func(done, total int)) ([]drivers.Found, error) {
	return lanescan.Scan(ctx, cidr, drivers.DefaultTCPPort, progress)
}
