// Package link is the agent's side of the cloud websocket (PROTOCOL.md §5):
// it connects, says hello, takes jobs into the spool and acknowledges them
// only once they are on disk, answers commands, streams log lines to
// support and replays the outbox until the cloud has acknowledged every
// event.
//
// A Link is built by New from Options and runs in one goroutine, Run, which
// owns every goroutine the link starts and stops them before it returns.
// The agent hands it small interfaces defined here (Backend, Outbox,
// Tailer), so the package imports nothing of package agent; the agent
// imports it. Time comes from Options.Clock (an internal/clock Clock):
// backoff, pings, the silence timeout, the welcome wait, the ack timeout
// and the outbox poll all run on it, so tests move a fake clock instead of
// sleeping; only the socket's write deadlines, which the kernel keeps, are
// on real time.
//
// What the link promises:
//   - a job_ack is sent only after Backend.Submit returned, that is after
//     the task is fsync'd; when the agent cannot take a job for now
//     (Classify says retry) nothing is sent and the cloud resends it;
//   - a job the link would refuse (a bad timeout, a frame that breaks §5
//     but names its task_no) still goes to Backend.Submit, with the
//     refusal in NewTask.Invalid, so a task_no the agent knows is answered
//     duplicate first;
//   - outbox events go out in task_no then n order, at most MaxInFlight
//     batches unacknowledged, and leave the outbox only when the cloud
//     acknowledges their batch; after a reconnect everything not yet
//     acknowledged is sent again from the start of the outbox;
//   - reconnects back off exponentially with full jitter, so a thousand
//     stores coming back at once spread out;
//   - a refused device token (HTTP 401/403, or a revoke message) puts the
//     link in state unpaired: it logs that once and then only looks at the
//     token again, every TokenRecheck, and connects when it changed.
package link
