package metrics

import "github.com/prometheus/client_golang/prometheus"

// integrity holds the collectors that say the promise is at risk: records
// lost to corruption and events the cloud will never see.
type integrity struct {
	corruptRecords  prometheus.Counter
	unreadable      prometheus.Gauge
	outboxDropped   prometheus.Gauge
	outboxCompacted prometheus.Gauge
	coreUp          prometheus.Gauge
}

func newIntegrity(reg *prometheus.Registry) integrity {
	in := integrity{
		corruptRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "printgate_corrupt_records_total",
			Help: "Task records that could not be decoded at start; each such task was ended FAILED with reason CORRUPT_RECORD and reported.",
		}),
		unreadable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "printgate_spool_unreadable_records",
			Help: "Records of a corrupt spool file that could not be salvaged when the agent started (0 when the spool opened cleanly). Non-zero means tickets may have been lost: read the ERROR log naming the quarantined file.",
		}),
		outboxDropped: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "printgate_outbox_dropped_events",
			Help: "Events the outbox cap dropped before the cloud acknowledged them (beyond superseded events of the same task); the cloud lacks that part of those tasks' history.",
		}),
		outboxCompacted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "printgate_outbox_compacted_events",
			Help: "Superseded events removed to keep the outbox under its cap; each task's latest event was kept.",
		}),
		coreUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "printgate_core_up",
			Help: "1 while the agent's core (lanes, timers) runs, 0 once it has stopped on a failure; intake answers 503 then.",
		}),
	}
	reg.MustRegister(in.corruptRecords, in.unreadable, in.outboxDropped, in.outboxCompacted, in.coreUp)
	return in
}

// IncCorruptRecord counts one task record quarantined as CORRUPT_RECORD.
func (m *Metrics) IncCorruptRecord() {
	if m == nil {
		return
	}
	m.corruptRecords.Inc()
}

// SetUnreadableRecords records how many records of a corrupt spool could not
// be salvaged at start.
func (m *Metrics) SetUnreadableRecords(n int) {
	if m == nil {
		return
	}
	m.unreadable.Set(float64(n))
}

// SetOutboxLoss records the outbox's persistent loss counters: events
// dropped by the cap and superseded events compacted away.
func (m *Metrics) SetOutboxLoss(dropped, compacted int) {
	if m == nil {
		return
	}
	m.outboxDropped.Set(float64(dropped))
	m.outboxCompacted.Set(float64(compacted))
}

// SetCoreUp records whether the agent's core runs.
func (m *Metrics) SetCoreUp(up bool) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.coreUp.Set(v)
}
