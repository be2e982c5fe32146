package wire

import (
	"slices"
	"time"
)

// Subprotocol is the websocket subprotocol the agent asks for and the cloud
// must select (Sec-WebSocket-Protocol); a connection without it is not a
// printgate link.
const Subprotocol = "printgate.v1"

// Handshake header names (PROTOCOL.md §5).
const (
	// HeaderAuthorization carries the device token as "Bearer <token>".
	HeaderAuthorization = "Authorization"
	// HeaderAgent carries the agent_id, so the cloud can tell which store
	// PC is connecting before the hello frame arrives.
	HeaderAgent = "X-Printgate-Agent"
)

// MaxFrameBytes is the largest frame either side sends or accepts (each
// reads a little more, see ReadLimit, to answer one too large). The largest legitimate frame is a
// job carrying a 1 MiB ESC/POS payload (the spool's task limit): base64
// makes that 1,398,104 bytes, plus at most a few hundred bytes of other
// fields, 1.34 MiB in all (a 1 MiB document is smaller). 2 MiB leaves a
// third of a megabyte for the envelope to grow while keeping what a peer
// can make the other buffer small. An events batch has no fixed size: the
// link sizes batches to fit (1,000 events with every field at its longest
// encode to well under 1 MiB, see TestBatchFits) and Encode refuses a
// frame over the limit rather than send one the other side would drop.
const MaxFrameBytes = 2 << 20

// ReadLimit is the websocket read limit both sides set: MaxFrameBytes and
// a margin of half as much again. A frame over MaxFrameBytes but within
// ReadLimit is still read whole, so Decode can refuse it as too_large (a
// job with its task_no, which the agent answers job_ack rejected) and the
// connection stays up; were the limit MaxFrameBytes itself, the websocket
// would close the connection (1009) before anyone could answer, and the
// cloud would resend the job into the same close forever. A frame over
// ReadLimit still closes the connection: what a peer can make the other
// buffer stays bounded.
const ReadLimit = MaxFrameBytes + MaxFrameBytes/2

// Liveness of the link (PROTOCOL.md §5).
const (
	// PingInterval is how often each side sends a websocket ping.
	PingInterval = 20 * time.Second
	// SilenceTimeout is how long without any frame (pongs included) before
	// a side takes the connection for dead and closes it.
	SilenceTimeout = 60 * time.Second
)

// The message types of PROTOCOL.md §5, as they appear in "type".
const (
	TypeHello         = "hello"          // agent → cloud, first frame
	TypeWelcome       = "welcome"        // cloud → agent, answers hello
	TypeJob           = "job"            // cloud → agent, a task to print
	TypeJobAck        = "job_ack"        // agent → cloud, after the job is on disk
	TypeEvents        = "events"         // agent → cloud, a batch of outbox events
	TypeEventsAck     = "events_ack"     // cloud → agent, the batch is stored
	TypeReprint       = "reprint"        // cloud → agent, a command
	TypeCancel        = "cancel"         // cloud → agent, a command
	TypeCommandResult = "command_result" // agent → cloud, answers reprint or cancel
	TypeLogsTail      = "logs_tail"      // cloud → agent, start sending log lines
	TypeLogLines      = "log_lines"      // agent → cloud, log lines for a logs_tail
	TypeLogsStop      = "logs_stop"      // cloud → agent, stop a logs_tail
	TypePrinters      = "printers"       // agent → cloud, printer states
	TypeError         = "error"          // either way, answers an undecodable frame
	TypeRevoke        = "revoke"         // cloud → agent, the device token is revoked
)

// Message is one frame's content. Each message type of §5 is a struct in
// this package, used by pointer (*Hello, *Job, ...); the interface is
// sealed so that only those types can be encoded.
type Message interface {
	// Type is the message's "type" on the wire, e.g. "job".
	Type() string
	// frame wraps the message with its "type" for encoding/json.
	frame() any
	// check reports the first way the message breaks §5, or nil.
	check() *FrameError
}

// newMessage makes an empty message of each type, for Decode.
var newMessage = map[string]func() Message{
	TypeHello:         func() Message { return new(Hello) },
	TypeWelcome:       func() Message { return new(Welcome) },
	TypeJob:           func() Message { return new(Job) },
	TypeJobAck:        func() Message { return new(JobAck) },
	TypeEvents:        func() Message { return new(Events) },
	TypeEventsAck:     func() Message { return new(EventsAck) },
	TypeReprint:       func() Message { return new(Reprint) },
	TypeCancel:        func() Message { return new(Cancel) },
	TypeCommandResult: func() Message { return new(CommandResult) },
	TypeLogsTail:      func() Message { return new(LogsTail) },
	TypeLogLines:      func() Message { return new(LogLines) },
	TypeLogsStop:      func() Message { return new(LogsStop) },
	TypePrinters:      func() Message { return new(Printers) },
	TypeError:         func() Message { return new(Error) },
	TypeRevoke:        func() Message { return new(Revoke) },
}

// Types lists every message type, sorted; error messages name them.
func Types() []string {
	out := make([]string, 0, len(newMessage))
	for t := range newMessage {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
