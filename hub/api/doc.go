// Package api is the hub's order API: what a chain's order system calls to
// print in its stores. Every request carries a tenant's API key (stored
// hashed); a store of another tenant is answered as one that does not
// exist. A job is answered 202 only once it is on disk; the same task_no
// again, in any state, 200 with duplicate true and the current state, never
// a second job. Bad input is refused with the codes of the agent's own
// API (PROTOCOL.md §3), before anything is stored. docs/HUB.md describes
// the routes and docs/hub-openapi.yaml their shapes, which the tests hold
// to the routes (Patterns) and to every answer.
package api
