package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"printgate/taskdef"
)

// Job is a task the cloud sends to print: the intake fields of PROTOCOL.md
// §3. Requires task_no, printer and exactly one of payload (ESC/POS bytes,
// base64 on the wire, not empty) and document (a JSON object); priority is
// empty, "normal" or "urgent". The intake judges the rest as it does for a
// local task: task_no and printer grammar, the document's lines, the
// timeout (a Go duration such as "90s").
type Job struct {
	TaskNo   string           `json:"task_no"`
	Printer  string           `json:"printer"`
	Priority taskdef.Priority `json:"priority,omitempty"`
	Payload  []byte           `json:"payload,omitempty"`
	Document json.RawMessage  `json:"document,omitempty"`
	Timeout  string           `json:"timeout,omitempty"`
}

// JobAck answers a job, sent only once the task is on disk (or refused).
// Requires task_no and result. A job accepted or found a duplicate carries
// the task's State and no Error; a rejected one carries an Error (its code
// one of §3's, e.g. invalid_task, bad_payload) and no State.
type JobAck struct {
	TaskNo string        `json:"task_no"`
	Result string        `json:"result"`
	State  taskdef.State `json:"state,omitempty"`
	Error  *Problem      `json:"error,omitempty"`
}

// The results of a job_ack.
const (
	ResultAccepted  = "accepted"  // a new task, on disk
	ResultDuplicate = "duplicate" // the task_no was already known; State is its current state
	ResultRejected  = "rejected"  // refused; Error says why, and resending it will not help
)

// Problem says why a job or a command failed: a code (for job_ack, one of
// PROTOCOL.md §3's error codes) and a sentence for a person. Code is
// required.
type Problem struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Type is "job".
func (*Job) Type() string { return TypeJob }

// Type is "job_ack".
func (*JobAck) Type() string { return TypeJobAck }

func (m *Job) frame() any {
	return &struct {
		Type string `json:"type"`
		*Job
	}{TypeJob, m}
}

func (m *JobAck) frame() any {
	return &struct {
		Type string `json:"type"`
		*JobAck
	}{TypeJobAck, m}
}

func (m *Job) check() *FrameError {
	if e := required("task_no", m.TaskNo); e != nil {
		return e
	}
	if e := required("printer", m.Printer); e != nil {
		return e
	}
	if e := oneOf("priority", m.Priority, true, taskdef.Priorities()...); e != nil {
		return e
	}
	hasPayload, hasDoc := m.Payload != nil, m.Document != nil
	switch {
	case hasPayload && hasDoc:
		return invalid("", "has both payload and document; a job carries exactly one")
	case !hasPayload && !hasDoc:
		return invalid("", "has neither payload (base64 ESC/POS) nor document (ticket lines); a job carries exactly one")
	case hasPayload && len(m.Payload) == 0:
		return invalid("payload", "is empty; it carries the ESC/POS bytes as base64")
	case hasDoc:
		t := bytes.TrimLeft(m.Document, " \t\r\n")
		if len(t) == 0 || t[0] != '{' || !json.Valid(m.Document) {
			return invalid("document", `must be a JSON object like {"lines": [...]}`)
		}
	}
	return nil
}

func (m *JobAck) check() *FrameError {
	if e := required("task_no", m.TaskNo); e != nil {
		return e
	}
	if e := oneOf("result", m.Result, false, ResultAccepted, ResultDuplicate, ResultRejected); e != nil {
		return e
	}
	if m.Result == ResultRejected {
		if m.State != "" {
			return invalid("state", "must be left out when the result is rejected: the task was not taken")
		}
		if m.Error == nil {
			return invalid("error", "is required when the result is rejected")
		}
		return m.Error.check("error")
	}
	if m.Error != nil {
		return invalid("error", fmt.Sprintf("must be left out when the result is %s", m.Result))
	}
	if m.State == "" {
		return invalid("state", fmt.Sprintf("is required when the result is %s", m.Result))
	}
	return checkState("state", m.State)
}

func (p *Problem) check(at string) *FrameError {
	return required(at+".code", p.Code)
}

// checkState checks that s is one of taskdef.AllStates.
func checkState(at string, s taskdef.State) *FrameError {
	return oneOf(at, s, false, taskdef.AllStates...)
}
