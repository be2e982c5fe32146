// Package localapi is printgate's local HTTP API (PROTOCOL.md §3): the intake
// POS terminals on the store LAN submit tickets to, the task and printer
// queries behind it, /healthz for supervisors and /metrics for Prometheus.
//
// It is deliberately apart from the agent core: it speaks HTTP and JSON and
// turns answers and errors into the status codes of the contract, while
// everything that decides (accepting, deduplicating, cancelling, reprinting)
// happens behind the small Backend interface the agent implements. A POS
// integrator only ever sees this package's answers, so every error carries a
// stable code and a message that says what to fix, and never internals, the
// payload or the token.
package localapi
