// Package agentlink is the hub's side of the agents' websocket (PROTOCOL.md
// §5): the handshake with a device token (stored hashed), hello and
// welcome, the store's jobs pushed at once and again on every connection
// until the agent's job_ack (never renumbered), the agent's events stored
// each (store, task_no, seq, n) once and acknowledged only once on disk.
//
// A store has one owner connection: a newer connection of its agent
// replaces the older one (close 1000, "replaced by a newer connection"),
// and the owner record in the store says which node and connection hold
// it. The connection learns of new jobs through the store's announcement
// subject and loads the store's pending jobs by subject filter; there is
// no durable consumer per store.
//
// Tail follows a connected agent's log (logs_tail with follow), bounded per
// store and in lines a second, for the order API's server-sent events and
// the hub's pages.
package agentlink
