package api

import "time"

// PrinterInfo is one configured printer as GET /api/v1/printers shows it.
type PrinterInfo struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// State is one of READY, BUSY, PAPER_OUT, COVER_OPEN, OFFLINE, ERROR.
	State string `json:"state"`
	// Queue counts the tasks waiting in this printer's lane.
	Queue int `json:"queue"`
	// FailoverTo names the backup currently printing this printer's work,
	// empty when the printer prints its own.
	FailoverTo string `json:"failover_to"`
	// Since is when the printer entered State.
	Since time.Time `json:"since,omitzero"`
	// RawPort is the address of the printer's raw port (raw_listen), where
	// a POS prints as to a port-9100 printer; empty when it has none open.
	RawPort string `json:"raw_port,omitempty"`
}

// Health is the agent's summary for GET /healthz.
type Health struct {
	// Status is "ok" while the agent serves; empty means "ok".
	Status string `json:"status"`
	// Link is the cloud link: online, offline, unpaired or disabled.
	Link string `json:"link"`
	// Outbox counts events not yet acknowledged by the cloud.
	Outbox int `json:"outbox"`
	// OutboxDropped counts events dropped by the outbox cap before the
	// cloud acknowledged them: history the cloud will never see.
	OutboxDropped int `json:"outbox_dropped"`
	// SpoolQuarantined names the corrupt spool file moved aside at start,
	// when there was one; UnreadableRecords counts what of it could not be
	// salvaged. Either makes Status "degraded".
	SpoolQuarantined  string `json:"spool_quarantined,omitempty"`
	UnreadableRecords int    `json:"unreadable_records,omitempty"`
	// SpoolUsedPercent is how full the spool is against the size at which
	// new tasks are refused (0 without a size cap); from
	// SpoolNearlyFullPercent on, Status is "degraded".
	SpoolUsedPercent int `json:"spool_used_percent,omitempty"`
	// SpoolRefusing is set while the spool refuses new tasks for room (its
	// cap, the disk's keep_free): one was refused in the last
	// SpoolStrainWindow. Status is then "degraded".
	SpoolRefusing bool `json:"spool_refusing,omitempty"`
	// SpoolWriteFailing is set while the progress of accepted tasks cannot
	// be written (a transition failed in the last SpoolStrainWindow; its
	// owner retries). Status is then "degraded".
	SpoolWriteFailing bool `json:"spool_write_failing,omitempty"`
	// SpoolCompactError says why the last compaction of the spool failed
	// or was not started (no room on the disk for its copy), until one
	// succeeds. Status is then "degraded".
	SpoolCompactError string `json:"spool_compact_error,omitempty"`
	// SalvageError says why the salvage of a corrupt spool failed: its
	// tasks were lost. Set with SpoolQuarantined.
	SalvageError string `json:"salvage_error,omitempty"`
	// Error says why Status is "failed" (the core stopped) or "degraded".
	Error string `json:"error,omitempty"`
}

// ReloadResult is what one config reload did, or why it did nothing.
type ReloadResult struct {
	// Config is the file that was read.
	Config string `json:"config"`
	// Applied is true when the file was valid and its printers took effect.
	Applied bool `json:"applied"`
	// Added, Changed and Removed name the printers whose lanes started,
	// were replaced, and stopped.
	Added   []string `json:"added"`
	Changed []string `json:"changed"`
	Removed []string `json:"removed"`
	// RestartNeeded names the settings (listen, tls, data_dir, cloud,
	// api_token, ...) that differ from the running ones and take effect
	// only when the agent restarts: a reload does not apply them.
	RestartNeeded []string `json:"restart_needed"`
	// Notes say what became of removed printers' waiting tasks.
	Notes []string `json:"notes,omitempty"`
	// Errors are the config's problems when the reload was refused, one
	// "file:line: message" each.
	Errors []string `json:"errors,omitempty"`
}

// PrinterDetail is one configured printer as the page shows it.
type PrinterDetail struct {
	PrinterInfo
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
	// Kind is "task", "printer", "link", "health", "raw_refused" (a job
	// a POS sent to a printer's raw port that could not be taken) or
	// "raw_waiting" (a raw port stopped accepting because the spool cannot
	// take a job, Detail says why; or, with Detail empty, accepts again).
	Kind string
	// Printer is the printer concerned, if any.
	Printer string
	// TaskNo and State are the task and its new state for Kind "task";
	// State is the printer's new state for Kind "printer".
	TaskNo string
	State  string
	// Detail says why, for Kind "raw_refused" and "raw_waiting".
	Detail string
}
