package link

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"printgate/internal/clock"
	"printgate/internal/loopback"
	"printgate/spool"
	"printgate/sync/wire"
)

// Defaults of Options.
const (
	DefaultMaxInFlight    = 4                // events batches awaiting events_ack
	DefaultBatchSize      = 500              // events per batch
	DefaultBackoffBase    = time.Second      // first reconnect delay bound
	DefaultBackoffCap     = 60 * time.Second // largest reconnect delay
	DefaultWelcomeTimeout = 10 * time.Second // wait for welcome after hello
	DefaultTokenRecheck   = 30 * time.Second // how often an unpaired link asks Token
	DefaultPollInterval   = time.Second      // outbox read without Notify
	DefaultStableAfter    = 30 * time.Second // a connection this long resets the backoff
	DefaultWriteTimeout   = 10 * time.Second // one frame's write, real clock
	DefaultAckTimeout     = 30 * time.Second // events_ack wait before a batch is resent
)

// MaxBatchSize is the largest BatchSize: wire's TestBatchFits shows that
// 1,000 events at their longest fit in a frame.
const MaxBatchSize = 1000

// Backend is what the link needs from the agent to act on the cloud's
// jobs and commands. *agent.Agent provides it through a thin adapter (its
// Printers method returns the page's printer view).
type Backend interface {
	// Submit accepts a task, returning only once it is fsync'd; duplicate
	// reports that the task_no was already known (the task is then the
	// existing one). A known task_no is answered duplicate before any
	// check; otherwise a task with Invalid set is refused with an error
	// wrapping Invalid (the link's own rejection of the job).
	Submit(ctx context.Context, nt spool.NewTask) (task *spool.Task, duplicate bool, err error)
	// Reprint prints a task again as a new version and returns that task.
	Reprint(ctx context.Context, taskNo string) (*spool.Task, error)
	// Cancel cancels a task that has not started printing.
	Cancel(ctx context.Context, taskNo string) (*spool.Task, error)
	// Printers returns every configured printer with its state, for hello
	// and printers frames.
	Printers() []wire.Printer
}

// Outbox is the spool's outbox as the link reads it. *spool.Spool
// implements it.
type Outbox interface {
	// ReadOutbox returns up to n of the oldest-keyed events, in task_no
	// then n order, without removing them.
	ReadOutbox(n int) ([]spool.OutboxEvent, error)
	// AckOutbox deletes the events with these keys; keys already gone are
	// ignored.
	AckOutbox(keys [][]byte) error
	// OutboxDepth is how many events wait for the cloud.
	OutboxDepth() (int, error)
}

var _ Outbox = (*spool.Spool)(nil)

// CommandStore keeps cloud command results by id on disk. *spool.Spool
// implements it.
type CommandStore interface {
	// CommandResult returns the result stored for id, if any.
	CommandResult(id string) ([]byte, bool, error)
	// SaveCommandResult stores id's result durably; the first one stored
	// for an id stays.
	SaveCommandResult(id string, result []byte) error
}

var _ CommandStore = (*spool.Spool)(nil)

// Tailer streams the agent's log lines to support (logs_tail). Tail sends
// up to lines recent lines at or above level (debug, info, warn, error;
// empty means all) that contain contains, then, if follow, every new such
// line, by calling send with one or more lines at a time. It returns when
// ctx is done (logs_stop or the link dropped), when send fails, or, without
// follow, once the recent lines are sent. It must leave secrets out.
type Tailer interface {
	Tail(ctx context.Context, level, contains string, lines int, follow bool, send func(lines []string) error) error
}

// Options configure a Link. URL, AgentID, Version, Token, Backend and
// Outbox are required; every other field has a default.
type Options struct {
	// URL is the cloud's websocket endpoint. wss:// is verified against
	// the system's root certificates; ws:// (no TLS) is accepted only for
	// a loopback host (127.0.0.0/8, ::1, localhost), for tests and demos.
	URL string
	// AgentID names this agent in the handshake and in hello.
	AgentID string
	// Version is the agent's version, sent in hello.
	Version string
	// Token returns the device token. It is called before every connect,
	// so a token stored by pairing is used without a restart. An error
	// wrapping os.ErrNotExist (or an empty token) means the agent is not
	// paired: the link is unpaired and asks again every TokenRecheck.
	Token func() (string, error)
	// Backend takes jobs and commands.
	Backend Backend
	// Classify maps an error from Backend to a PROTOCOL.md §3 error code
	// and a message for the cloud. retry means the failure is the agent's
	// for now (unavailable, shutting down): a job is then not acknowledged
	// at all, and the cloud resends it. Default: DefaultClassify.
	Classify func(err error) (code, message string, retry bool)
	// Outbox is read for events batches and acknowledged as the cloud
	// confirms them.
	Outbox Outbox
	// Commands, when set, keeps the results of reprint and cancel across
	// the agent's restarts, so a command resent under the same id after a
	// restart is answered with its first result and not run again.
	// *spool.Spool implements it.
	Commands CommandStore
	// Tailer serves logs_tail; nil answers logs_tail with command_result
	// ok=false, code not_supported.
	Tailer Tailer
	// Revoked, if set, is called (from Run's goroutine) when the cloud
	// revokes the device token (a revoke frame, or a handshake refused with
	// 401/403), with the reason, so the agent can forget the token and go
	// back to pairing.
	Revoked func(reason string)

	// MaxInFlight is how many events batches may wait for events_ack at
	// once. Default 4.
	MaxInFlight int
	// BatchSize is the most events in one batch, up to MaxBatchSize.
	// Default 500.
	BatchSize int
	// AckTimeout is how long a batch waits for its events_ack before it is
	// sent again on the same connection, under the same id (the cloud
	// dedupes by (task_no, n), and an ack of either copy deletes the
	// batch): one lost ack costs a resend, never a window slot for the
	// life of the connection. On the link's clock. Default 30 s.
	AckTimeout time.Duration

	// Clock drives every timer of the link. Default clock.RealClock().
	Clock clock.Clock
	// Seed seeds the reconnect jitter; 0 draws from the runtime's source.
	Seed uint64
	// Logger receives the link's logs. Default slog.Default().
	Logger *slog.Logger
	// Dialer dials the cloud; tests pass one with their own root
	// certificates. Its Subprotocols are replaced by wire.Subprotocol.
	// One that skips TLS verification is refused. Default: a dialer with
	// the system roots, the environment's proxy and a 15 s handshake
	// timeout.
	Dialer *websocket.Dialer

	// BackoffBase and BackoffCap bound the reconnect delay: attempt n
	// waits a uniform draw from [0, min(BackoffCap, BackoffBase·2ⁿ)].
	// Defaults 1 s and 60 s.
	BackoffBase, BackoffCap time.Duration
	// StableAfter is how long a welcomed connection must have lasted for
	// its loss to start the backoff from the base again. Default 30 s.
	StableAfter time.Duration
	// PingInterval is how often the link pings. Default wire.PingInterval.
	PingInterval time.Duration
	// SilenceTimeout drops a connection on which nothing (frame, ping or
	// pong) arrived for that long. Default wire.SilenceTimeout.
	SilenceTimeout time.Duration
	// WelcomeTimeout bounds the wait for welcome after hello. Default 10 s.
	WelcomeTimeout time.Duration
	// TokenRecheck is how often an unpaired link asks Token again.
	// Default 30 s.
	TokenRecheck time.Duration
	// PollInterval is how often the outbox is read when Notify was not
	// called. Default 1 s.
	PollInterval time.Duration
	// WriteTimeout bounds one frame's write, on the real clock: it is a
	// network deadline, not a protocol timer. Default 10 s.
	WriteTimeout time.Duration
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Classify == nil {
		o.Classify = DefaultClassify
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	def(&o.BackoffBase, DefaultBackoffBase)
	def(&o.BackoffCap, DefaultBackoffCap)
	def(&o.StableAfter, DefaultStableAfter)
	def(&o.PingInterval, wire.PingInterval)
	def(&o.SilenceTimeout, wire.SilenceTimeout)
	def(&o.WelcomeTimeout, DefaultWelcomeTimeout)
	def(&o.TokenRecheck, DefaultTokenRecheck)
	def(&o.PollInterval, DefaultPollInterval)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.AckTimeout, DefaultAckTimeout)
	return o
}

func (o Options) validate() error {
	var missing []string
	if o.AgentID == "" {
		missing = append(missing, "AgentID")
	}
	if o.Version == "" {
		missing = append(missing, "Version")
	}
	if o.Token == nil {
		missing = append(missing, "Token")
	}
	if o.Backend == nil {
		missing = append(missing, "Backend")
	}
	if o.Outbox == nil {
		missing = append(missing, "Outbox")
	}
	if len(missing) > 0 {
		return fmt.Errorf("link options: %s required", strings.Join(missing, ", "))
	}
	if o.BatchSize > MaxBatchSize {
		return fmt.Errorf("link options: batch size %d is over %d events", o.BatchSize, MaxBatchSize)
	}
	if o.BackoffCap < o.BackoffBase {
		return fmt.Errorf("link options: backoff cap %v is below its base %v", o.BackoffCap, o.BackoffBase)
	}
	if o.Dialer != nil && o.Dialer.TLSClientConfig != nil && o.Dialer.TLSClientConfig.InsecureSkipVerify {
		return errors.New("link options: the dialer skips TLS verification; the cloud's certificate must be verified")
	}
	return checkURL(o.URL)
}

// checkURL accepts wss:// anywhere and ws:// only to a loopback host.
func checkURL(raw string) error {
	if raw == "" {
		return errors.New("link options: URL required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("link options: cloud URL: %w", err)
	}
	if u.Host == "" || u.User != nil {
		return fmt.Errorf("link options: cloud URL %q must be like wss://cloud.example.com/agent, without user info", raw)
	}
	switch u.Scheme {
	case "wss":
		return nil
	case "ws":
		if loopback.Host(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("link options: cloud URL %q is ws:// (no TLS) to a host that is not loopback; use wss://", raw)
	}
	return fmt.Errorf("link options: cloud URL %q: scheme must be wss (or ws to a loopback host)", raw)
}

// DefaultClassify maps the spool's sentinel errors to PROTOCOL.md §3 codes.
// Context errors and anything it does not know are retry: the agent keeps
// nothing and the cloud resends. The agent passes its own Classify, which
// knows its errors too (unknown printer, bad document, unavailable).
func DefaultClassify(err error) (code, message string, retry bool) {
	switch {
	case errors.Is(err, spool.ErrInvalid):
		return "invalid_task", err.Error(), false
	case errors.Is(err, spool.ErrTooLarge):
		return "payload_too_large", err.Error(), false
	case errors.Is(err, spool.ErrFull):
		return "storage_full", "the agent's spool is full and takes no new tasks", false
	case errors.Is(err, spool.ErrNotFound):
		return "not_found", err.Error(), false
	case errors.Is(err, spool.ErrPruned):
		return "pruned", err.Error(), false
	case errors.Is(err, spool.ErrIllegalTransition):
		return "conflict", err.Error(), false
	}
	return "unavailable", "the agent cannot take this now; retry later", true
}
