// Package cloudtest is a test double of the printgate cloud: the reference
// cloud of docs/PROTOCOL.md §7, held in memory. It is not the real cloud and
// keeps nothing on disk; agent tests, the demo and cmd/cloudsim use it to
// have something that speaks the cloud's side of the contract exactly.
//
// A Cloud serves, on one http.Handler:
//
//   - the agent websocket (§5) at AgentPath: subprotocol wire.Subprotocol,
//     a bearer device token checked at the handshake (401 for an unknown or
//     revoked token), hello answered with welcome, queued jobs pushed and
//     resent after every reconnect until the agent acknowledges them,
//     events deduplicated by (task_no, n) and acknowledged, job_ack,
//     printers, command_result and log_lines recorded, refused frames
//     answered with an error frame, websocket pings and a silence timeout;
//   - the RFC 8628 device authorization grant (§6) under /oauth, with
//     /oauth/device/approve and /oauth/device/deny standing in for the
//     manager who scans the QR code;
//   - a test API under /api (§7), mirrored by the Cloud's Go methods for
//     tests in the same process.
//
// Everything it records is bounded (see Options): at most MaxQueuedJobs
// unacknowledged jobs per agent (Queue then fails with ErrQueueFull), at
// most MaxEvents recorded events per agent (the oldest are forgotten, with
// their dedupe keys, and counted as dropped), and at most MaxRecords of each
// other record per agent (acks, command results, log lines, error frames,
// printer pushes; the oldest go first).
//
// Every goroutine a Cloud starts belongs to one websocket connection and
// ends with it; Close ends them all and waits.
package cloudtest
