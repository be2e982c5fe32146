// Package metrics is the hub's Prometheus instrumentation, on its own
// registry: jobs submitted, answered as duplicates, refused, acknowledged
// and expired; events stored; agents connected. No label names a tenant
// or a store, so /metrics shows volumes, never whose they are. Every method
// does nothing on a nil *Metrics, so code under test can run without.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the hub's series.
type Metrics struct {
	reg       *prometheus.Registry
	submits   *prometheus.CounterVec
	acks      *prometheus.CounterVec
	events    prometheus.Counter
	expired   *prometheus.CounterVec
	connected prometheus.Gauge
	webhooks  *prometheus.CounterVec
}

// New makes the series on a new registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		submits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "printgate_hub_submits_total",
			Help: "Order API submits by result: stored, duplicate, refused (4xx), failed (5xx)."}, []string{"result"}),
		acks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "printgate_hub_job_acks_total",
			Help: "job_ack frames recorded, by result (accepted, duplicate, rejected)."}, []string{"result"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "printgate_hub_events_stored_total",
			Help: "Agent events stored (each (store, task_no, seq, n) once)."}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "printgate_hub_jobs_expired_total",
			Help: "Jobs no agent acknowledged by their deadline, by reason (AGENT_OFFLINE, NO_ACK)."}, []string{"reason"}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "printgate_hub_agents_connected",
			Help: "Agents with a welcomed connection on this node."}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "printgate_hub_webhook_deliveries_total",
			Help: "Webhook attempts by result: delivered (2xx), failed (retried), dead (given up after a day), dropped (endpoint deleted)."}, []string{"result"}),
	}
	m.reg.MustRegister(m.submits, m.acks, m.events, m.expired, m.connected, m.webhooks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry at /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the hub's registry, for tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Submit counts an order API submit by result.
func (m *Metrics) Submit(result string) {
	if m != nil {
		m.submits.WithLabelValues(result).Inc()
	}
}

// Ack counts a recorded job_ack.
func (m *Metrics) Ack(result string) {
	if m != nil {
		m.acks.WithLabelValues(result).Inc()
	}
}

// Events counts stored events.
func (m *Metrics) Events(n int) {
	if m != nil {
		m.events.Add(float64(n))
	}
}

// Expired counts an expired job.
func (m *Metrics) Expired(reason string) {
	if m != nil {
		m.expired.WithLabelValues(reason).Inc()
	}
}

// Connected sets the agents connected to this node.
func (m *Metrics) Connected(n int) {
	if m != nil {
		m.connected.Set(float64(n))
	}
}

// Delivery counts a webhook attempt by result.
func (m *Metrics) Delivery(result string) {
	if m != nil {
		m.webhooks.WithLabelValues(result).Inc()
	}
}
