// Package spool is printgate's durable task store: every accepted print task,
// its per-printer queue position, its timeline and the outbox of events still
// owed to the cloud live in one bbolt file.
//
// The spool's promises are the product's: Accept returns only after the task
// is on disk (fsync'd), a task_no is accepted at most once for the whole dedupe
// window, every state change is one transaction that also appends the timeline
// entry and the outbox event, and an illegal state change is refused without
// changing anything. A crash at any moment loses nothing that was acknowledged.
//
// Concurrent writers are group-committed by a single commit loop: whatever is
// waiting when one commit ends goes into the next one, so one fsync serves many
// submitters and throughput grows with concurrency.
package spool
