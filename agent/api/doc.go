// Package api is the agent's own contract with its adapters: the sentinel
// errors the core wraps, the stable error codes the doors answer with, and
// the types the local HTTP API, the manager page and the cloud link show.
// It is a leaf: the core (package agent) and every adapter (agent/localapi,
// agent/web, sync/link) import it, so the core needs neither HTML nor the
// LAN API to name its own results.
package api
