package daemon

import (
	"context"

	"printgate/agent"
	"printgate/agent/api"
	"printgate/agent/lanescan"
	"printgate/agent/web"
	"printgate/drivers"
)

// pageBackend is the manager page's backend: the agent's intake and views,
// plus the LAN scan and discovery, which need nothing of the core, and the
// live view's changes, fed from the agent's events.
type pageBackend struct {
	*agent.Agent
	changes *hub
	// emulatedOnly: the demo's printers are emulated; this PC's devices
	// are not offered.
	emulatedOnly bool
}

var _ web.Backend = pageBackend{}

// Subscribe delivers a api.Change on each task transition, printer state
// change, failover switch, link state change and health change, until ctx
// ends. Sends never wait: a subscriber whose buffer is full misses changes.
func (b pageBackend) Subscribe(ctx context.Context) <-chan api.Change {
	return b.changes.subscribe(ctx)
}

// Discover lists serial ports and USB printers on this PC, none in the
// demo, whose printers are all emulated.
func (b pageBackend) Discover() ([]drivers.Found, error) {
	if b.emulatedOnly {
		return nil, nil
	}
	return lanescan.Discover()
}

// Scan looks for port-9100 printers on cidr, or on this PC's own IPv4
// networks.
func (b pageBackend) Scan(ctx context.Context, cidr string, progress func(done, total int)) ([]drivers.Found, error) {
	return lanescan.Scan(ctx, cidr, drivers.DefaultTCPPort, progress)
}

// ScanNetworks names the networks Scan covers on this PC: the /24 around
// each private IPv4 address, as install scans.
func (b pageBackend) ScanNetworks() ([]string, error) {
	return lanescan.Networks()
}

// ProbePrinter tests the printer the manager typed by its address (IP:port)
// before the page adds it.
func (b pageBackend) ProbePrinter(ctx context.Context, addr string) (drivers.Found, error) {
	return lanescan.Probe(ctx, addr)
}
