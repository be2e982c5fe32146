package web

import (
	"context"
	"html/template"

	"printgate/agent/api"
	"printgate/agent/localapi"
	"printgate/agent/logring"
	"printgate/drivers"
	"printgate/spool"
)

// Backend is what the page needs from the agent. It is the intake API's
// backend plus the manager's actions and views; agent/daemon implements it
// over *agent.Agent.
// Errors wrap the same sentinels localapi.Backend documents.
type Backend interface {
	localapi.Backend

	// Retry prints again a task that ended without paper: TIMED_OUT,
	// FAILED or HELD. printer is where ("" = the task's own printer); it
	// must be a configured printer. A HELD task is re-queued in place
	// (HELD → QUEUED, marked POSSIBLE DUPLICATE since it may have printed);
	// a finished one becomes a new version linked by reprint_of, unless a
	// version of it waits or printed already (*api.RetryExists, which the
	// page shows). Any other state is api.ErrConflict. It returns the task
	// that will print.
	Retry(ctx context.Context, taskNo, printer string) (*spool.Task, error)
	// PrinterDetails describes every configured printer for the printers
	// page and the dashboard, in config order.
	PrinterDetails() []api.PrinterDetail
	// TestPrint queues a short test ticket on printer (origin manager) and
	// returns its task.
	TestPrint(ctx context.Context, printer string) (*spool.Task, error)
	// Discover lists serial ports and USB printers attached to this PC.
	Discover() ([]drivers.Found, error)
	// Scan looks for port-9100 printers on cidr ("" = this PC's own IPv4
	// LANs, bounded by drivers.MaxScanHostBits), calling progress as hosts
	// are done. It stops early when ctx ends.
	Scan(ctx context.Context, cidr string, progress func(done, total int)) ([]drivers.Found, error)
	// Link describes the cloud link for the dashboard.
	Link() api.LinkInfo
	// Pairing describes the pairing. While the agent is unpaired and has a
	// [cloud] auth_url it starts (or keeps) a device flow whose code the
	// page shows; the agent saves the token when a manager approves it.
	Pairing(ctx context.Context) api.PairingInfo
	// Unpair forgets the device token.
	Unpair() error
	// Subscribe delivers a Change whenever a task, a printer, the link or
	// the agent's health changes, until ctx ends; then the channel is
	// closed. A slow reader misses changes rather than blocking the agent
	// (the channel is buffered and sends do not wait), so a page re-reads
	// the state it shows on each change instead of applying them as deltas.
	Subscribe(ctx context.Context) <-chan api.Change
	// Tail streams the agent's recent and (with o.Follow) new log lines,
	// redacted, as support's remote tail does.
	Tail(ctx context.Context, o logring.TailOptions, send func(lines []string) error) error
	// Preview draws t as it looks on paper: HTML styled like receipt paper,
	// from the same renderer and decoder the printer path uses (text with
	// double size, bold and inverted banners; QR codes and barcodes as
	// images; logos).
	Preview(t *spool.Task) (template.HTML, error)
}
