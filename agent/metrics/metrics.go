package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"printgate/spool"
)

// PrinterStates are the values SetPrinterState one-hot encodes, the printer
// states of PROTOCOL.md §3. A fixed set keeps the series count bounded and
// lets a dashboard sum over printers per state.
var PrinterStates = []string{"READY", "BUSY", "PAPER_OUT", "COVER_OPEN", "OFFLINE", "ERROR"}

// latencyBuckets span what accept-to-paper takes in a store: tens of
// milliseconds for an idle ready printer, seconds for a busy lane or a retry,
// minutes when a printer was parked until someone fixed it (the default task
// timeout is 90 s, a raised one can be longer).
var latencyBuckets = []float64{
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 90, 120, 300, 600,
}

// Metrics holds printgate's collectors on a private registry. Create it with
// New; the zero value is not usable, a nil *Metrics is (every method is then
// a no-op).
type Metrics struct {
	reg *prometheus.Registry

	tasks        *prometheus.GaugeVec
	queueDepth   *prometheus.GaugeVec
	printerState *prometheus.GaugeVec
	outbox       prometheus.Gauge
	printed      *prometheus.HistogramVec
	attempts     *prometheus.CounterVec
	failovers    *prometheus.CounterVec
	timeouts     *prometheus.CounterVec
	accepted     *prometheus.CounterVec
	downgrades   *prometheus.CounterVec
	rawRefused   *prometheus.CounterVec
	integrity
}

// New builds the collectors and registers them, with the Go runtime and
// process collectors, on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		tasks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "printgate_tasks",
			Help: "Tasks in the spool per state (pruned tombstones excluded). A growing QUEUED, PARKED or HELD count means tickets are waiting for a printer or a manager.",
		}, []string{"state"}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "printgate_queue_depth",
			Help: "Tasks waiting in each printer's lane (not yet printed or finished), after failover.",
		}, []string{"printer"}),
		printerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "printgate_printer_state",
			Help: "Printer state, one-hot: 1 for the state the status monitor last saw, 0 for the others (READY, BUSY, PAPER_OUT, COVER_OPEN, OFFLINE, ERROR).",
		}, []string{"printer", "state"}),
		outbox: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "printgate_outbox_events",
			Help: "Task events written but not yet acknowledged by the cloud; it grows while the WAN link is down and drains after it returns.",
		}),
		printed: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "printgate_task_print_seconds",
			Help:    "Time from accept (fsync) to the proof of paper, per printer that printed and per confirmation strength (printed, consumed, delivered).",
			Buckets: latencyBuckets,
		}, []string{"printer", "confirmation"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "printgate_print_attempts_total",
			Help: "Attempts to send a job to a printer, per printer and result (e.g. printed, retry, unknown, failed); a rising non-printed share points at a flaky link or printer.",
		}, []string{"printer", "result"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "printgate_failovers_total",
			Help: "Lane switches from a printer to another (failover to the backup, and failback to the primary).",
		}, []string{"from", "to"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "printgate_tasks_timed_out_total",
			Help: "Tasks that reached their deadline unprinted, per printer and the reason the store saw (DEVICE_OFFLINE, NO_ACK, PAPER_OUT, BUSY). Each one is a ticket someone had to be told about.",
		}, []string{"printer", "reason"}),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "printgate_tasks_accepted_total",
			Help: "Task submissions answered with success, per origin (cloud, local, manager, raw); duplicate=\"true\" counts resubmissions of a known task_no, which are answered but never printed again.",
		}, []string{"origin", "duplicate"}),
		downgrades: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "printgate_confirmation_downgrades_total",
			Help: "Times a printer's completion proof weakened (e.g. printed to consumed: a status answer came too slowly or stopped coming), per printer and levels. Each is logged at WARN; the printer is probed again on its next job.",
		}, []string{"printer", "from", "to"}),
		rawRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "printgate_raw_jobs_refused_total",
			Help: "Jobs a POS sent to a printer's raw port that were read but not taken, per printer and reason (too_large, spool_full, error). Each is a ticket the POS believes it printed; the page raises an alert for each.",
		}, []string{"printer", "reason"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.tasks, m.queueDepth, m.printerState, m.outbox, m.printed,
		m.attempts, m.failovers, m.timeouts, m.accepted, m.downgrades, m.rawRefused,
	)
	m.integrity = newIntegrity(m.reg)
	return m
}

// Registry is the registry holding every printgate collector; it is the
// prometheus.Gatherer the HTTP API serves at /metrics. Tests and embedders
// may register more collectors on it.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// SetTaskCounts sets the per-state task gauge from spool counts (as returned
// by spool.Spool.Counts). Every known state is set, to 0 when absent from
// counts, so a state that emptied out does not keep its last value.
func (m *Metrics) SetTaskCounts(counts map[spool.State]int) {
	if m == nil {
		return
	}
	for _, s := range spool.AllStates {
		m.tasks.WithLabelValues(string(s)).Set(float64(counts[s]))
	}
	for s, n := range counts {
		if !s.Valid() {
			m.tasks.WithLabelValues(string(s)).Set(float64(n))
		}
	}
}

// SetQueueDepth records how many tasks wait in printer's lane.
func (m *Metrics) SetQueueDepth(printer string, n int) {
	if m == nil {
		return
	}
	m.queueDepth.WithLabelValues(printer).Set(float64(n))
}

// SetPrinterState records printer's current state: 1 for state, 0 for every
// other state in PrinterStates. A state outside PrinterStates leaves all of
// them at 0, which reads as "unknown" on a dashboard.
func (m *Metrics) SetPrinterState(printer, state string) {
	if m == nil {
		return
	}
	for _, s := range PrinterStates {
		v := 0.0
		if s == state {
			v = 1
		}
		m.printerState.WithLabelValues(printer, s).Set(v)
	}
}

// ForgetPrinter drops every per-printer series of printer (queue depth and
// state), for a printer removed from the config, so it stops showing as
// stuck in its last state.
func (m *Metrics) ForgetPrinter(printer string) {
	if m == nil {
		return
	}
	m.queueDepth.DeletePartialMatch(prometheus.Labels{"printer": printer})
	m.printerState.DeletePartialMatch(prometheus.Labels{"printer": printer})
}

// SetOutboxDepth records how many events still wait for the cloud's
// acknowledgement.
func (m *Metrics) SetOutboxDepth(n int) {
	if m == nil {
		return
	}
	m.outbox.Set(float64(n))
}

// ObservePrinted records one task's accept-to-paper time d on printer (the
// one that printed it) with the confirmation strength it got.
func (m *Metrics) ObservePrinted(printer, confirmation string, d time.Duration) {
	if m == nil {
		return
	}
	m.printed.WithLabelValues(printer, confirmation).Observe(d.Seconds())
}

// IncAttempt counts one attempt to send a job to printer, ending in result.
// Results should come from a small fixed set; they become label values.
func (m *Metrics) IncAttempt(printer, result string) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(printer, result).Inc()
}

// IncFailover counts one lane switch from printer from to printer to.
func (m *Metrics) IncFailover(from, to string) {
	if m == nil {
		return
	}
	m.failovers.WithLabelValues(from, to).Inc()
}

// IncTimeout counts one task that timed out on printer for reason.
func (m *Metrics) IncTimeout(printer, reason string) {
	if m == nil {
		return
	}
	m.timeouts.WithLabelValues(printer, reason).Inc()
}

// IncAccepted counts one successful submission from origin; duplicate says
// whether its task_no was already known.
func (m *Metrics) IncAccepted(origin string, duplicate bool) {
	if m == nil {
		return
	}
	m.accepted.WithLabelValues(origin, strconv.FormatBool(duplicate)).Inc()
}

// IncRawRefused counts one job printer's raw port read and could not take,
// for reason (too_large, spool_full, closing, error).
func (m *Metrics) IncRawRefused(printer, reason string) {
	if m == nil {
		return
	}
	m.rawRefused.WithLabelValues(printer, reason).Inc()
}

// IncConfirmationDowngrade counts one weakening of printer's completion
// proof from level from to level to (the words of escpos.Confirmation:
// printed, consumed, delivered), as escpos.DeviceOptions.OnDowngrade
// reports it.
func (m *Metrics) IncConfirmationDowngrade(printer, from, to string) {
	if m == nil {
		return
	}
	m.downgrades.WithLabelValues(printer, from, to).Inc()
}
