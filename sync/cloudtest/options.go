package cloudtest

import (
	"log/slog"
	"time"

	"printgate/sync/wire"
)

// Clock tells the time. The Cloud reads it for what the contract times in
// wall-clock terms (device code expiry, device poll pacing, welcome's
// server_time); tests inject a clock they move by hand. Websocket pings
// and the silence timeout run on real time, shortened through Options.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Defaults of Options.
const (
	DefaultMaxQueuedJobs      = 1000
	DefaultMaxEvents          = 100_000
	DefaultMaxRecords         = 10_000
	DefaultMaxDeviceCodes     = 1000
	DefaultDeviceCodeLifetime = 10 * time.Minute
	DefaultPollInterval       = 5 * time.Second
	DefaultWriteTimeout       = 10 * time.Second
)

// Options shape a Cloud. The zero value is the contract's timing and the
// defaults above.
type Options struct {
	// StoreID is the store_id of every welcome; empty: "store-" followed by
	// the agent's id.
	StoreID string
	// PingInterval is how often the cloud pings each connection; 0:
	// wire.PingInterval. Tests shorten it.
	PingInterval time.Duration
	// SilenceTimeout drops a connection from which nothing (no frame, no
	// pong) arrived for that long; 0: wire.SilenceTimeout.
	SilenceTimeout time.Duration
	// WriteTimeout drops a connection on which one frame could not be
	// written for that long; 0: DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Clock is the wall clock of the device flow and of server_time; nil:
	// the real clock.
	Clock Clock
	// DeviceCodeLifetime is a device code's expires_in; 0:
	// DefaultDeviceCodeLifetime. It is rounded up to whole seconds, as the
	// answer carries seconds.
	DeviceCodeLifetime time.Duration
	// PollInterval is the interval the device flow asks the agent to poll
	// at; 0: DefaultPollInterval. Rounded up to whole seconds (at least 1),
	// as the answer carries seconds.
	PollInterval time.Duration
	// VerificationURI is the page a manager opens to approve a device;
	// empty: http://HOST/device, HOST being the Host of the device code
	// request.
	VerificationURI string
	// MaxQueuedJobs bounds each agent's unacknowledged jobs; 0:
	// DefaultMaxQueuedJobs.
	MaxQueuedJobs int
	// MaxEvents bounds each agent's recorded events; beyond it the oldest
	// are forgotten together with their dedupe keys (a resent forgotten
	// event is then recorded again) and counted as dropped; 0:
	// DefaultMaxEvents.
	MaxEvents int
	// MaxRecords bounds each agent's other records (job acks, command
	// results, log lines, error frames, printer pushes), each on its own;
	// the oldest go first; 0: DefaultMaxRecords.
	MaxRecords int
	// MaxDeviceCodes bounds the device authorizations kept; the oldest is
	// forgotten first; 0: DefaultMaxDeviceCodes.
	MaxDeviceCodes int
	// DropEventsAck, when set, is asked about every events batch the cloud
	// stores; true stores the batch but sends no events_ack for it, as a
	// cloud that loses an ack would, so tests and the chaos run can check
	// that the agent resends and goes on. It is called with the cloud's
	// lock held and must not call the Cloud's methods.
	DropEventsAck func(agentID, batch string) bool
	// Logger receives what the cloud sees (connections, refused frames);
	// nil: discarded.
	Logger *slog.Logger
	// Broken makes the cloud break the contract on purpose, in the ways
	// Breakage names, so that cloudcheck's tests can show it catches each
	// one. DANGEROUS: never set it outside tests; the zero value is the
	// contract.
	Broken Breakage
}

// Breakage lists the contract breaks a Cloud can commit on purpose, each
// a mistake a real cloud implementation could make (sync/cloudcheck's
// tests run against each one and expect the check that names it to fail).
type Breakage struct {
	// AckUnreceived answers every events batch with a second events_ack,
	// for a batch id the cloud never received.
	AckUnreceived bool
	// ReorderBatch stores each events batch's events in reverse order.
	ReorderBatch bool
	// ForgetDedupe records events again when they are resent, instead of
	// deduplicating them on (task_no, n).
	ForgetDedupe bool
	// IgnoreSeq deduplicates events on (task_no, n) alone, as before
	// events carried seq: a task_no's new life is dropped as a duplicate.
	IgnoreSeq bool
	// IgnoreSlowDown never answers a device token poll slow_down, however
	// fast the agent polls.
	IgnoreSlowDown bool
	// JobsBeforeWelcome pushes an agent's queued jobs before the welcome
	// that answers its hello.
	JobsBeforeWelcome bool
	// RenumberResent resends a job that has no job_ack under a new task_no
	// (the old one with "_r" appended), so the agent cannot know it is the
	// same job.
	RenumberResent bool
	// AcceptAnyToken upgrades a handshake with no device token or one the
	// cloud never issued, instead of refusing it with 401.
	AcceptAnyToken bool
	// NoPing never pings an agent's connection.
	NoPing bool
	// DropJobOnSend forgets a job once it is written to a connection,
	// without waiting for its job_ack.
	DropJobOnSend bool
	// ResendRejected keeps a job the agent answered rejected in the queue,
	// so it is resent at every connection.
	ResendRejected bool
	// NoRevokeFrame revokes by closing the connection without sending the
	// revoke frame first.
	NoRevokeFrame bool
	// LoseResults records no command_result and no log_lines.
	LoseResults bool
	// IgnoreExpiry answers a poll for an expired device code
	// authorization_pending instead of expired_token.
	IgnoreExpiry bool
	// IgnoreDeny answers a poll for a denied device code
	// authorization_pending instead of access_denied.
	IgnoreDeny bool
}

// withDefaults fills in the zero fields.
func (o Options) withDefaults() Options {
	if o.PingInterval <= 0 {
		o.PingInterval = wire.PingInterval
	}
	if o.SilenceTimeout <= 0 {
		o.SilenceTimeout = wire.SilenceTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.DeviceCodeLifetime <= 0 {
		o.DeviceCodeLifetime = DefaultDeviceCodeLifetime
	}
	o.DeviceCodeLifetime = ceilSeconds(o.DeviceCodeLifetime)
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	o.PollInterval = ceilSeconds(o.PollInterval)
	if o.MaxQueuedJobs <= 0 {
		o.MaxQueuedJobs = DefaultMaxQueuedJobs
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.MaxDeviceCodes <= 0 {
		o.MaxDeviceCodes = DefaultMaxDeviceCodes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// ceilSeconds rounds d up to whole seconds, at least one.
func ceilSeconds(d time.Duration) time.Duration {
	s := (d + time.Second - 1) / time.Second
	if s < 1 {
		s = 1
	}
	return s * time.Second
}
