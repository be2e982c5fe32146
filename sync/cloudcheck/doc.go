// Package cloudcheck checks a cloud implementation against the agent's
// side of docs/PROTOCOL.md §5–§6: it plays agents (the real link of
// sync/link over a real spool in a temporary directory, no printers)
// against the cloud, watches every frame on their connections, and
// reports each check as pass, fail or skip with what it saw. It is what
// `printgate cloudcheck` runs, for a SaaS that writes its own cloud side.
//
// Some checks need the cloud to be driven (queue a job, send a command,
// approve a pairing code) or read (the events it recorded): they use the
// optional test API of PROTOCOL.md §7, which the reference cloud
// (sync/cloudtest) has, and are skipped, with the reason, against a cloud
// without it.
//
// Every wait runs on Options.Clock, so tests run the contract's timing
// (20 s pings, 5 s poll intervals) faster. Every goroutine Run starts has
// ended when it returns.
package cloudcheck
