package link

import (
	"context"
	cryptorand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"printgate/internal/backoff"
	"printgate/internal/clock"
	"printgate/internal/warnlimit"
	"printgate/sync/wire"
)

// The states of a Link, as State reports them (and /healthz shows them).
const (
	// StateOnline: connected and welcomed by the cloud.
	StateOnline = "online"
	// StateOffline: not connected; the link is connecting or backing off.
	StateOffline = "offline"
	// StateUnpaired: no device token, or the cloud refused or revoked it;
	// the link waits for a new token and does not dial until then.
	StateUnpaired = "unpaired"
)

// Stats is what the manager page shows about the link.
type Stats struct {
	// State is one of StateOnline, StateOffline, StateUnpaired.
	State string
	// Dials counts connection attempts since Run started.
	Dials int
	// Connects counts connections the cloud welcomed since Run started.
	Connects int
	// OnlineSince is when the current connection was welcomed; zero when
	// not online.
	OnlineSince time.Time
	// LastSync is the latest time before which every events batch the
	// link sent has its events_ack: the ack of the oldest batch in flight
	// moves it to when the next oldest was sent (to the ack's time when
	// none is left), and an outbox found empty with nothing in flight
	// moves it to then. A batch whose ack was lost holds it back until the
	// batch is acknowledged, however many later batches are.
	LastSync time.Time
	// InFlight is how many events batches wait for events_ack.
	InFlight int
	// Resent counts events batches sent again because their events_ack
	// did not arrive within AckTimeout.
	Resent int
	// LastError says why the last connection failed or ended; empty when
	// none has.
	LastError string
	// Store is the store_id of the cloud's last welcome: the store this
	// agent belongs to. It is kept while offline; empty until a welcome.
	Store string
}

// Link is the agent's side of the cloud websocket. Build it with New and
// run it with Run; its other methods are safe to call from any goroutine,
// before, during and after Run.
type Link struct {
	opts    Options
	log     *slog.Logger
	clock   clock.Clock
	dialer  *websocket.Dialer
	backoff backoff.Backoff // used by Run's goroutine only

	notify   chan struct{} // Notify: outbox has new events
	printers chan struct{} // PrintersChanged
	recheck  chan struct{} // CheckToken

	running atomic.Bool
	batches atomic.Uint64 // batch ids, unique for the Link's life
	// batchPrefix starts every batch id: random per Link, so ids do not
	// repeat across restarts and an ack meant for an earlier process's
	// batch can never delete one of this process's.
	batchPrefix string

	mu    sync.Mutex
	stats Stats

	// commands remembers recent commands' results across connections, so
	// a resent command is answered, not run twice (commands.go).
	commands recentCommands

	// onState is called after each change of stats.State (OnStateChange).
	onState atomic.Pointer[func(state string)]

	// peerWarns bounds the log lines a cloud can provoke at will
	// (internal/warnlimit); every such line goes through it.
	peerWarns warnlimit.Limiter
}

// New checks opts and returns a Link ready to Run. It dials nothing.
func New(opts Options) (*Link, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	var d websocket.Dialer
	if opts.Dialer != nil {
		d = *opts.Dialer
	} else {
		d = websocket.Dialer{
			Proxy:            http.ProxyFromEnvironment,
			HandshakeTimeout: 15 * time.Second,
			TLSClientConfig:  &tls.Config{MinVersion: tls.VersionTLS12}, // system roots
		}
	}
	d.Subprotocols = []string{wire.Subprotocol}
	l := &Link{
		opts:   opts,
		log:    opts.Logger.With("component", "link"),
		clock:  opts.Clock,
		dialer: &d,
		backoff: backoff.Backoff{
			Base: opts.BackoffBase, Factor: 2, Cap: opts.BackoffCap, FullJitter: true,
		},
		notify:   make(chan struct{}, 1),
		printers: make(chan struct{}, 1),
		recheck:  make(chan struct{}, 1),
		stats:    Stats{State: StateOffline},
	}
	l.peerWarns.Now = opts.Clock.Now
	var r [6]byte
	if _, err := cryptorand.Read(r[:]); err != nil {
		return nil, fmt.Errorf("link: batch id prefix: %w", err)
	}
	l.batchPrefix = "b" + hex.EncodeToString(r[:]) + "-"
	if opts.Seed != 0 {
		l.backoff.Rand = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	}
	if err := l.backoff.Validate(); err != nil {
		return nil, fmt.Errorf("link options: %w", err)
	}
	return l, nil
}

// Notify tells the link that new events are in the outbox, so it sends
// them now rather than at the next poll. It never blocks; calls while one
// is pending are merged.
func (l *Link) Notify() { poke(l.notify) }

// PrintersChanged tells the link that a printer's state changed; when
// online it pushes a printers frame with every printer's state. It never
// blocks; calls while one is pending are merged into one frame.
func (l *Link) PrintersChanged() { poke(l.printers) }

// CheckToken asks the link to call Token now: an unpaired link instead of
// at the next TokenRecheck (right after pairing stored a token), an online
// one to close its connection when the token it connected with is gone or
// replaced (a manager unpaired, or paired again). It never blocks.
func (l *Link) CheckToken() { poke(l.recheck) }

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// State is the link's state: StateOnline, StateOffline or StateUnpaired.
func (l *Link) State() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats.State
}

// Stats returns a snapshot of the link's counters for the manager page.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// OnStateChange sets f to be called with the new state each time the
// link's State changes (nil: no longer called), so a live view can refresh
// without polling. f runs on the link's goroutine after the change, outside
// its locks, and must not block.
func (l *Link) OnStateChange(f func(state string)) {
	if f == nil {
		l.onState.Store(nil)
		return
	}
	l.onState.Store(&f)
}

func (l *Link) update(f func(*Stats)) {
	l.mu.Lock()
	before := l.stats.State
	f(&l.stats)
	after := l.stats.State
	l.mu.Unlock()
	if after != before {
		if h := l.onState.Load(); h != nil {
			(*h)(after)
		}
	}
}

func (l *Link) setState(s string) {
	l.update(func(st *Stats) {
		st.State = s
		if s != StateOnline {
			st.OnlineSince = time.Time{}
			st.InFlight = 0
		}
	})
}

// errRunning is returned by a second concurrent Run.
var errRunning = errors.New("link: Run is already running")

// Run connects to the cloud and keeps the link up until ctx is done: it
// reconnects with backoff after a failure, waits for a new token when the
// cloud refuses the one it has, and stops every goroutine it started
// before it returns. It returns nil when ctx is done, and an error only
// when Run is already running.
func (l *Link) Run(ctx context.Context) error {
	if !l.running.CompareAndSwap(false, true) {
		return errRunning
	}
	defer l.running.Store(false)
	defer l.setState(StateOffline)

	attempt := 0
	refused := ""  // the token the cloud refused; not tried again
	unpaired := "" // why the link is unpaired, logged once per cause
	for ctx.Err() == nil {
		token, err := l.opts.Token()
		if err == nil && token == "" {
			err = os.ErrNotExist
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			l.setState(StateUnpaired)
			if unpaired != "no token" {
				unpaired = "no token"
				l.log.Info("cloud link waiting for pairing: no device token yet")
			}
			l.wait(ctx, l.opts.TokenRecheck, l.recheck)
			continue
		case err != nil:
			l.setState(StateOffline)
			d := l.backoff.Delay(attempt)
			attempt++
			l.log.Warn("cloud link: cannot read the device token", "err", err, "retry_in", d)
			l.update(func(st *Stats) { st.LastError = "read device token: " + err.Error() })
			l.wait(ctx, d, nil)
			continue
		case token == refused:
			l.setState(StateUnpaired)
			l.wait(ctx, l.opts.TokenRecheck, l.recheck)
			continue
		}
		refused, unpaired = "", ""

		out := l.connect(ctx, token)
		if ctx.Err() != nil {
			return nil
		}
		if out.err != nil {
			l.update(func(st *Stats) { st.LastError = out.err.Error() })
		}
		if out.unpaired {
			refused, unpaired = token, "refused"
			attempt = 0
			// Revoked first: by the time the state says unpaired, the
			// agent has forgotten the token. A handshake refused with
			// 401/403 counts too: the revoke frame and the close can race,
			// and the cloud has said the token is no good either way.
			if l.opts.Revoked != nil {
				reason := out.reason
				if !out.revoked && out.err != nil {
					reason = "the cloud refused the token at the handshake: " + out.err.Error()
				}
				l.opts.Revoked(reason)
			}
			l.setState(StateUnpaired)
			l.log.Error("cloud link: the cloud refused this agent's device token; pair the agent again (it reconnects once a new token is stored)", "err", out.err)
			l.wait(ctx, l.opts.TokenRecheck, l.recheck)
			continue
		}
		if out.tokenChanged {
			// Not a failure: read the token again at once (none: unpaired;
			// a new one: connect with it).
			attempt = 0
			l.setState(StateOffline)
			continue
		}
		l.setState(StateOffline)
		if out.welcomed && out.lasted >= l.opts.StableAfter {
			attempt = 0
		}
		d := l.backoff.Delay(attempt)
		attempt++
		l.log.Warn(msgDown, "err", out.err, "retry_in", d.Round(time.Millisecond))
		l.wait(ctx, d, nil)
	}
	return nil
}

// wait blocks for d on the link's clock, until wake, or until ctx is done.
func (l *Link) wait(ctx context.Context, d time.Duration, wake <-chan struct{}) {
	t := l.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	case <-wake:
	}
}

// msgDown is logged each time a connection ends, before the backoff.
const msgDown = "cloud link down"
