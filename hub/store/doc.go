// Package store is the hub's record, on an embedded NATS JetStream server:
// tenants, stores, API keys and device tokens (hashed), jobs and their
// state, and which connection owns a store's agent.
//
// Every write returns only once it is on disk: the engine runs with
// sync_always, so the acknowledgement JetStream gives a write comes after
// its fsync, and the hub answers 202, forwards nothing and sends no
// events_ack before that.
//
// Layout (all key/value buckets, bounded; docs/HUB.md has the numbers):
//
//   - hub_tasks: a job's record, keyed "<store>.<task_no>": state,
//     timeline, and the body until the agent acknowledges it. It is written
//     first with Create, which is the task_no dedupe: permanent for the
//     retention window (the bucket's TTL), not the engine's two-minute
//     message-id window. Later writes (job_acks, events) are
//     compare-and-set on the revision read.
//   - hub_pending: the jobs of a store no agent has acknowledged yet, under
//     the same key, so the connection that owns the store loads them by the
//     filter "<store>.>" (no durable consumer per store).
//   - hub_owners: store -> the node and connection that hold its agent,
//     claimed and released by compare-and-set.
//   - hub_tenants, hub_stores, hub_apikeys, hub_devices: the directory.
//   - hub_pairings: device authorizations (RFC 8628) for an hour.
//   - hub_commands: reprint and cancel commands by store and caller id,
//     with the agent's result, for a week.
package store
