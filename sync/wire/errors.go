package wire

import (
	"errors"
	"strconv"
	"strings"
)

// Codes of a FrameError, sent as the code of an "error" frame (PROTOCOL.md
// §5) so the peer's log says what was wrong with what it sent.
const (
	// CodeBadJSON: not one JSON object, a syntax error, data after the
	// object, a null value, a repeated key, nesting deeper than 32, or a
	// value of the wrong JSON type.
	CodeBadJSON = "bad_json"
	// CodeTooLarge: the frame is over MaxFrameBytes.
	CodeTooLarge = "too_large"
	// CodeUnknownType: "type" is missing or names no message of §5.
	CodeUnknownType = "unknown_type"
	// CodeUnknownField: a field §5 does not define for that message.
	CodeUnknownField = "unknown_field"
	// CodeInvalid: a required field is missing, or a value is outside what
	// §5 allows (an unknown state, n below 1, bad base64, ...).
	CodeInvalid = "invalid"
)

// ErrUnordered is wrapped by Events.Ordered when a batch breaks the
// task_no-then-n order of §5.
var ErrUnordered = errors.New("events out of order")

// FrameError says why a frame was refused, by Decode (the frame received
// breaks §5) or by Encode (the message would break it, so it is not sent).
// It has what the link needs to answer with an "error" frame (Code, Reason)
// and to log one line (Error).
type FrameError struct {
	// Type is the frame's "type" when it could be read, else empty.
	Type string
	// Field is where the fault is, as a path such as "events[2].n";
	// empty when it is the frame as a whole.
	Field string
	// Code is one of the Code constants.
	Code string
	// Reason says in words what is wrong and, where it helps, what is
	// allowed. It never repeats a payload.
	Reason string
	// TaskNo is the task_no of a refused job frame when it could be read,
	// so the agent can answer job_ack "rejected" and the cloud stops
	// resending the job; empty for other types.
	TaskNo string
	// Err is the underlying cause (a *json.SyntaxError, ...), if any.
	Err error
}

// Error is one line for the log: "job frame: events[2].n: ...".
func (e *FrameError) Error() string {
	var b strings.Builder
	if e.Type != "" {
		b.WriteString(e.Type)
		b.WriteString(" frame: ")
	} else {
		b.WriteString("frame: ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap exposes the underlying cause.
func (e *FrameError) Unwrap() error { return e.Err }

// invalid is a CodeInvalid error at field.
func invalid(field, reason string) *FrameError {
	return &FrameError{Field: field, Code: CodeInvalid, Reason: reason}
}

// required checks that a required string field is set.
func required(field, v string) *FrameError {
	if v == "" {
		return invalid(field, "is required")
	}
	return nil
}

// oneOf checks that v is one of allowed; empty is allowed only if optional.
func oneOf[S ~string](field string, v S, optional bool, allowed ...S) *FrameError {
	if v == "" && optional {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	if v == "" {
		return invalid(field, "is required; it is one of "+strings.Join(names, ", "))
	}
	return invalid(field, "is "+quote(string(v))+"; it must be one of "+strings.Join(names, ", "))
}

// quote quotes s for an error message, shortened so that an error never
// carries a long value back.
func quote(s string) string {
	short := shorten(s, 64)
	if short == s {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.TrimSuffix(short, "…")) + "…"
}

// shorten cuts s to at most max bytes and an ellipsis, on a UTF-8 boundary.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
