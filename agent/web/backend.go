package web

import (
	"context"
	"html/template"
	"time"

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
	// a finished one becomes a new version linked by reprint_of. Any other
	// state is localapi.ErrConflict. It returns the task that will print.
	Retry(ctx context.Context, taskNo, printer string) (*spool.Task, error)
	// PrinterDetails describes every configured printer for the printers
	// page and the dashboard, in config order.
	PrinterDetails() []PrinterDetail
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
	Link() LinkInfo
	// Pairing describes the pairing. While the agent is unpaired and has a
	// [cloud] auth_url it starts (or keeps) a device flow whose code the
	// page shows; the agent saves the token when a manager approves it.
	Pairing(ctx context.Context) PairingInfo
	// Unpair forgets the device token.
	Unpair() error
	// Subscribe delivers a Change whenever a task, a printer, the link or
	// the agent's health changes, until ctx ends; then the channel is
	// closed. A slow reader misses changes rather than blocking the agent
	// (the channel is buffered and sends do not wait), so a page re-reads
	// the state it shows on each change instead of applying them as deltas.
	Subscribe(ctx context.Context) <-chan Change
	// Tail streams the agent's recent and (with o.Follow) new log lines,
	// redacted, as support's remote tail does.
	Tail(ctx context.Context, o logring.TailOptions, send func(lines []string) error) error
	// Preview draws t as it looks on paper: HTML styled like receipt paper,
	// from the same renderer and decoder the printer path uses (text with
	// double size, bold and inverted banners; QR codes and barcodes as
	// images; logos).
	Preview(t *spool.Task) (template.HTML, error)
}

// PrinterDetail is one configured printer as the page shows it.
type PrinterDetail struct {
	localapi.PrinterInfo
	// Backup names the configured backup printer, if any.
	Backup string
	// Profile is the printer profile's name ("epson-80").
	Profile string
	// Capabilities lists what the probe found, one short phrase each
	// ("80 mm, 48 columns", "GB18030", "cutter", "ASB status"), empty
	// until the printer was probed.
	Capabilities []string
	// Model is the printer's own description, when it gave one.
	Model string
	// LastTask and LastAt are the last ticket this printer put on paper.
	LastTask string
	LastAt   time.Time
	// RawJobs and RawRefused count the jobs the printer's raw port
	// (PrinterInfo.RawPort) took and refused since it opened.
	RawJobs, RawRefused uint64
}

// LinkInfo describes the cloud link.
type LinkInfo struct {
	// State is online, offline, unpaired or disabled (no [cloud] table).
	State string
	// Outbox counts events not yet acknowledged by the cloud.
	Outbox int
	// LastSync is when the cloud last had every event; zero if never.
	LastSync time.Time
	// LastError says why the last connection failed or ended.
	LastError string
	// Store is the store the cloud says this agent belongs to, when known.
	Store string
}

// PairingInfo describes the pairing for the pairing page.
type PairingInfo struct {
	// Configured is false without a [cloud] table with an auth_url.
	Configured bool
	// Paired is true when a device token is stored.
	Paired bool
	// Store is the store the agent is paired to, when known.
	Store string
	// UserCode, VerificationURI and VerificationURIComplete are the
	// device flow's code while unpaired; the QR encodes
	// VerificationURIComplete (or VerificationURI without it).
	UserCode                string
	VerificationURI         string
	VerificationURIComplete string
	// Expires is when the shown code stops working.
	Expires time.Time
	// Error says why no code could be had (the cloud unreachable...).
	Error string
}

// Change is a notice that something the page shows changed.
type Change struct {
	// Kind is "task", "printer", "link", "health" or "raw_refused" (a job
	// a POS sent to a printer's raw port that could not be taken).
	Kind string
	// Printer is the printer concerned, if any.
	Printer string
	// TaskNo and State are the task and its new state for Kind "task";
	// State is the printer's new state for Kind "printer".
	TaskNo string
	State  string
	// Detail says why, for Kind "raw_refused".
	Detail string
}
