package wire_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"printgate/spool"
	"printgate/sync/wire"
)

var at = time.Date(2026, 11, 30, 12, 0, 5, 250_000_000, time.UTC)

// golden is one valid frame of every message type, byte for byte as
// Encode writes it, with the message it decodes to. It pins the wire form
// of PROTOCOL.md §5, wire.Event's JSON included.
var golden = []struct {
	frame string
	msg   wire.Message
}{
	{`{"type":"hello","agent_id":"pg-0042","version":"1.4.0","printers":[{"name":"kitchen","state":"READY"},{"name":"bar","state":"PAPER_OUT"}],"outbox":17}`,
		&wire.Hello{AgentID: "pg-0042", Version: "1.4.0", Printers: []wire.Printer{{Name: "kitchen", State: "READY"}, {Name: "bar", State: "PAPER_OUT"}}, Outbox: 17}},
	{`{"type":"welcome","store_id":"store-7","server_time":"2026-11-30T12:00:05.25Z"}`,
		&wire.Welcome{StoreID: "store-7", ServerTime: at}},
	{`{"type":"job","task_no":"ORD20261130-0042_KITCHEN_v1","printer":"kitchen","priority":"urgent","payload":"G0AbYQE=","timeout":"90s"}`,
		&wire.Job{TaskNo: "ORD20261130-0042_KITCHEN_v1", Printer: "kitchen", Priority: spool.PriorityUrgent, Payload: []byte{0x1b, 0x40, 0x1b, 0x61, 0x01}, Timeout: "90s"}},
	{`{"type":"job","task_no":"ORD20261130-0043_BAR_v1","printer":"bar","document":{"lines":[{"text":"桌 12 <A&B>","bold":true},{"cut":"partial"}]}}`,
		&wire.Job{TaskNo: "ORD20261130-0043_BAR_v1", Printer: "bar", Document: json.RawMessage(`{"lines":[{"text":"桌 12 <A&B>","bold":true},{"cut":"partial"}]}`)}},
	{`{"type":"job_ack","task_no":"ORD20261130-0042_KITCHEN_v1","result":"accepted","state":"ACCEPTED"}`,
		&wire.JobAck{TaskNo: "ORD20261130-0042_KITCHEN_v1", Result: wire.ResultAccepted, State: spool.StateAccepted}},
	{`{"type":"job_ack","task_no":"ORD-1","result":"rejected","error":{"code":"bad_payload","message":"payload is not valid base64"}}`,
		&wire.JobAck{TaskNo: "ORD-1", Result: wire.ResultRejected, Error: &wire.Problem{Code: "bad_payload", Message: "payload is not valid base64"}}},
	{`{"type":"events","batch":"b-19","events":[` +
		`{"task_no":"A-1","n":1,"state":"ACCEPTED","printer":"kitchen","attempts":0,"origin":"local","at":"2026-11-30T12:00:05.25Z","job":{"printer":"kitchen","priority":"normal","origin":"local","size":5,"sha256":"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}},` +
		`{"task_no":"A-1","n":2,"state":"QUEUED","printer":"kitchen","target":"bar","attempts":0,"origin":"local","at":"2026-11-30T12:00:05.25Z"},` +
		`{"task_no":"B-7","n":4,"state":"PRINTED","printer":"bar","confirmation":"printed","attempts":2,"possible_duplicate":true,"origin":"cloud","at":"2026-11-30T12:00:05.25Z"}` +
		`]}`,
		&wire.Events{Batch: "b-19", Events: []wire.Event{
			{TaskNo: "A-1", N: 1, State: spool.StateAccepted, Printer: "kitchen", Origin: spool.OriginLocal, At: at,
				Job: &wire.JobInfo{Printer: "kitchen", Priority: spool.PriorityNormal, Origin: spool.OriginLocal, Size: 5, SHA256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}},
			{TaskNo: "A-1", N: 2, State: spool.StateQueued, Printer: "kitchen", Target: "bar", Origin: spool.OriginLocal, At: at},
			{TaskNo: "B-7", N: 4, State: spool.StatePrinted, Printer: "bar", Confirmation: spool.ConfirmPrinted, Attempts: 2, PossibleDuplicate: true, Origin: spool.OriginCloud, At: at},
		}}},
	{`{"type":"events_ack","batch":"b-19"}`, &wire.EventsAck{Batch: "b-19"}},
	{`{"type":"reprint","id":"c-1","task_no":"A-1"}`, &wire.Reprint{ID: "c-1", TaskNo: "A-1"}},
	{`{"type":"cancel","id":"c-2","task_no":"A-2"}`, &wire.Cancel{ID: "c-2", TaskNo: "A-2"}},
	{`{"type":"command_result","id":"c-1","ok":true,"task_no":"A-1_v2"}`, &wire.CommandResult{ID: "c-1", OK: true, TaskNo: "A-1_v2"}},
	{`{"type":"command_result","id":"c-2","ok":false,"error":{"code":"conflict","message":"task A-2 is already SENDING"}}`,
		&wire.CommandResult{ID: "c-2", Error: &wire.Problem{Code: "conflict", Message: "task A-2 is already SENDING"}}},
	{`{"type":"logs_tail","id":"t-1","level":"warn","contains":"kitchen","follow":true,"lines":200}`,
		&wire.LogsTail{ID: "t-1", Level: "warn", Contains: "kitchen", Follow: true, Lines: 200}},
	{`{"type":"log_lines","id":"t-1","lines":["time=2026-11-30T12:00:05Z level=WARN msg=\"paper out\" printer=kitchen","<second>"]}`,
		&wire.LogLines{ID: "t-1", Lines: []string{`time=2026-11-30T12:00:05Z level=WARN msg="paper out" printer=kitchen`, "<second>"}}},
	{`{"type":"logs_stop","id":"t-1"}`, &wire.LogsStop{ID: "t-1"}},
	{`{"type":"printers","printers":[{"name":"kitchen","state":"COVER_OPEN"}]}`,
		&wire.Printers{Printers: []wire.Printer{{Name: "kitchen", State: "COVER_OPEN"}}}},
	{`{"type":"error","code":"unknown_field","message":"job frame: copies: is not a field of the job frame","frame_type":"job"}`,
		&wire.Error{Code: wire.CodeUnknownField, Message: "job frame: copies: is not a field of the job frame", FrameType: wire.TypeJob}},
	{`{"type":"revoke","reason":"removed from store 7 by a manager"}`, &wire.Revoke{Reason: "removed from store 7 by a manager"}},
	{`{"type":"revoke"}`, &wire.Revoke{}},
}

// goldenOf returns the first golden frame of type typ.
func goldenOf(t *testing.T, typ string) string {
	t.Helper()
	for _, g := range golden {
		if g.msg.Type() == typ {
			return g.frame
		}
	}
	t.Fatalf("no golden %s frame", typ)
	return ""
}

// frameError asserts err is a *FrameError and returns it.
func frameError(t *testing.T, err error) *wire.FrameError {
	t.Helper()
	var fe *wire.FrameError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *wire.FrameError", err, err)
	}
	return fe
}

// edit decodes frame into generic JSON, lets fn change it and encodes it
// again, so a test can break one field of a valid frame.
func edit(t *testing.T, frame string, fn func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(frame), &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// first returns the first element of the array at key, as an object.
func first(m map[string]any, key string) map[string]any {
	return m[key].([]any)[0].(map[string]any)
}
