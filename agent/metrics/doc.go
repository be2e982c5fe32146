// Package metrics is printgate's Prometheus instrumentation: the numbers a
// store operator or the support team graphs and alerts on (tasks per state,
// queue depth and state per printer, accept-to-paper latency, attempts,
// failovers, timeouts, intake volume, completion-proof downgrades), kept on
// the agent's own registry so that nothing else in the process can add to or
// clash with them.
//
// The agent core calls the Metrics methods as things happen; the local HTTP
// API serves Registry() at /metrics. Every method is safe for concurrent use,
// costs a label lookup and an atomic add, and does nothing on a nil *Metrics,
// so code under test can run without metrics.
package metrics
