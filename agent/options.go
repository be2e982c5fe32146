package agent

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"printgate/agent/config"
	"printgate/agent/logring"
	"printgate/agent/metrics"
	"printgate/drivers/escpos"
	"printgate/internal/clock"
	"printgate/spool"
)

// Printer is what a lane needs from a physical printer. *escpos.Device
// implements it over any transport.
type Printer interface {
	// Status asks the printer how it is.
	Status(ctx context.Context) (escpos.Status, error)
	// Print sends one job and returns how strongly its completion was
	// confirmed, or a *escpos.PrintError saying what went wrong and whether
	// any job byte left.
	Print(ctx context.Context, job []byte, id uint64) (escpos.Confirmation, error)
}

// idleCloser is implemented by printers that hold a connection open and can
// let it go when no work flows, so other software can reach the printer.
type idleCloser interface {
	CloseIfIdle(now time.Time) bool
}

// Options are the agent's collaborators; zero fields get working defaults.
type Options struct {
	// Clock drives every timer: monitors, retries, deadlines, failover.
	// Tests pass a *clock.FakeClock. Default: the real clock.
	Clock clock.Clock
	// Logger receives structured logs. Default: slog.Default().
	Logger *slog.Logger
	// Metrics records what the agent does. Default: a private registry.
	Metrics *metrics.Metrics
	// OpenPrinter builds the Printer for a configured printer. Default:
	// an escpos.Device over drivers.Open that reports a weakened completion
	// proof (log and metric).
	OpenPrinter func(pc *config.Printer) Printer
	// Rand seeds retry jitter. Default: a random seed.
	Rand *rand.Rand
	// PollIdle and PollBusy are the status monitor's intervals while a
	// printer is idle and while work waits for it. Defaults 5s and 500ms.
	PollIdle, PollBusy time.Duration
	// AgeAfter is how long a normal task waits before it counts as urgent.
	// Default 30s.
	AgeAfter time.Duration
	// JobTimeout, if set, overrides every printer's job_timeout (the
	// bound on one Print call: write plus completion barrier), for tests.
	JobTimeout time.Duration
	// StopGrace bounds how long Run waits, after its context ends, for jobs
	// in flight to finish their completion barrier. Default 10s.
	StopGrace time.Duration
	// Observe, if set, is called after every task transition the agent makes,
	// every printer state change and every other change the agent's views
	// show (health, link, a refused raw job), from the goroutine where it
	// happened. It must not block. Tests wait on it instead of sleeping; the
	// manager page's live view is fed from it (agent/daemon). The attached
	// cloud link hears of the same events without it (AttachLink).
	Observe func(Event)
	// Ring keeps the agent's recent log lines for the manager page's live
	// tail (Tail); nil means no lines are kept and Tail says so.
	Ring *logring.Ring
}

func (o *Options) fill() {
	if o.Clock == nil {
		o.Clock = clock.RealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.PollIdle <= 0 {
		o.PollIdle = 5 * time.Second
	}
	if o.PollBusy <= 0 {
		o.PollBusy = 500 * time.Millisecond
	}
	if o.AgeAfter <= 0 {
		o.AgeAfter = 30 * time.Second
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 10 * time.Second
	}
}

// Event is what Options.Observe is told.
type Event struct {
	Printer string      // the lane where it happened
	Task    *spool.Task // the task after a transition, or nil
	State   string      // the printer state after a state change, when Task is nil
	// Switch marks a failover (FailoverTo is the backup) or a failback
	// (FailoverTo is empty) of Printer.
	Switch     bool
	FailoverTo string
	// Err reports that the spool could not record Task's next state (disk
	// full, I/O error); the lane keeps the task and tries again shortly.
	Err error
	// Health marks a change of what /healthz reports beyond any one
	// printer: the core stopped, the spool crossed its nearly-full mark,
	// the outbox dropped events.
	Health bool
	// Link marks a change of the cloud link: its new state in LinkState,
	// or, with LinkState empty, a link attached or a pairing saved or
	// removed.
	Link      bool
	LinkState string
	// RawRefused says why a raw port refused a job a POS sent to Printer
	// (the POS believes it printed).
	RawRefused string
	// RawWaiting marks a change of Printer's raw port: it stopped
	// accepting because the spool cannot take a job (RawWaitingWhy says
	// why; POS connections wait meanwhile) or, with RawWaitingWhy empty,
	// it accepts again.
	RawWaiting    bool
	RawWaitingWhy string
}
