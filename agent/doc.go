// Package agent is printgate's orchestrator: it wires the spool, the timing
// wheels and the printer drivers into the dispatch rules of docs/DESIGN.md,
// "Dispatch".
//
// Each physical printer has one lane: a goroutine that owns the tasks routed
// to that printer and prints them strictly one at a time in queue order
// (priority, then accept sequence, with normal tasks ageing to urgent). A
// status monitor per printer feeds the lane the printer's state, and the lane
// pushes only to a ready printer: busy or out of paper is waited out without
// spending an attempt, offline parks the lane's tasks until the printer is
// back. Every task state change goes through its lane, so a task's fate is
// decided in one place; the spool's state table refuses anything else.
//
// The push wheel times retries (exponential backoff with jitter), failover
// and failback checks; the timeout wheel holds each task's one absolute
// deadline, after which the task ends TIMED_OUT with the reason the store
// actually saw. On start every lane and timer is rebuilt from the spool.
//
// The process around the core (logger, listener, LAN API, manager page,
// cloud link, SIGHUP) is wired in agent/daemon; the agent reports what
// changed through Options.Observe and talks to the link it is given
// (AttachLink).
package agent
