package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"printgate/spool"
	"printgate/sync/wire"
)

// TestEncodeRefusesInvalid ensures Encode sends nothing Decode would
// refuse: each message below breaks one rule and gets a *FrameError of
// its type and field, and no bytes.
func TestEncodeRefusesInvalid(t *testing.T) {
	for _, c := range []struct {
		m     wire.Message
		field string
	}{
		{&wire.Hello{Version: "1", Printers: []wire.Printer{{Name: "k", State: "READY"}}}, "agent_id"},
		{&wire.Hello{AgentID: "a", Version: "1", Printers: []wire.Printer{{Name: "k", State: "ready"}}}, "printers[0].state"},
		{&wire.Welcome{StoreID: "s"}, "server_time"},
		{&wire.Job{TaskNo: "A", Printer: "k"}, ""},
		{&wire.Job{TaskNo: "A", Printer: "k", Payload: []byte{}}, "payload"},
		{&wire.Job{TaskNo: "A", Printer: "k", Payload: []byte{1}, Document: json.RawMessage(`{}`)}, ""},
		{&wire.Job{TaskNo: "A", Printer: "k", Document: json.RawMessage(`{"lines":`)}, "document"},
		{&wire.Job{TaskNo: "A", Printer: "k", Document: json.RawMessage(`null`)}, "document"},
		{&wire.JobAck{TaskNo: "A", Result: wire.ResultAccepted}, "state"},
		{&wire.JobAck{TaskNo: "A", Result: wire.ResultRejected, Error: &wire.Problem{}}, "error.code"},
		{&wire.Events{Batch: "b"}, "events"},
		{&wire.Events{Batch: "b", Events: []wire.Event{{TaskNo: "A", N: 1, State: spool.StateQueued}, {TaskNo: "A", State: spool.StateSending}}}, "events[1].n"},
		{&wire.EventsAck{}, "batch"},
		{&wire.Reprint{ID: "c"}, "task_no"},
		{&wire.Cancel{TaskNo: "A"}, "id"},
		{&wire.CommandResult{ID: "c"}, "error"},
		{&wire.LogsTail{ID: "t", Level: "WARN"}, "level"},
		{&wire.LogLines{ID: "t"}, "lines"},
		{&wire.LogsStop{}, "id"},
		{&wire.Error{Message: "x"}, "code"},
	} {
		b, err := wire.Encode(c.m)
		if err == nil {
			t.Errorf("Encode(%#v) = %s, want an error at %q", c.m, b, c.field)
			continue
		}
		fe := frameError(t, err)
		if fe.Code != wire.CodeInvalid || fe.Type != c.m.Type() || fe.Field != c.field || b != nil {
			t.Errorf("Encode(%#v): code %q type %q field %q (%v), want invalid %s at %q", c.m, fe.Code, fe.Type, fe.Field, err, c.m.Type(), c.field)
		}
	}
}

// TestEncodeRefusesNil ensures a nil message, typed or not, is an error
// and not a panic or a "null" frame.
func TestEncodeRefusesNil(t *testing.T) {
	for _, m := range []wire.Message{nil, (*wire.Job)(nil), (*wire.Revoke)(nil)} {
		if b, err := wire.Encode(m); err == nil || b != nil {
			t.Errorf("Encode(%#v) = %q, %v; want an error", m, b, err)
		}
	}
}

// TestEncodeRefusesTooLarge ensures a frame over MaxFrameBytes is refused
// rather than sent for the peer to drop.
func TestEncodeRefusesTooLarge(t *testing.T) {
	m := &wire.LogLines{ID: "t", Lines: []string{strings.Repeat("x", wire.MaxFrameBytes)}}
	b, err := wire.Encode(m)
	fe := frameError(t, err)
	if b != nil || fe.Code != wire.CodeTooLarge || fe.Type != wire.TypeLogLines {
		t.Fatalf("Encode of a %d byte line: code %q type %q (%v)", wire.MaxFrameBytes, fe.Code, fe.Type, err)
	}
}

// TestLargestJobFits ensures MaxFrameBytes holds the largest job the agent
// takes: a 1 MiB payload (the spool's default task limit), every other
// field at its longest, and the same as a 1 MiB document; both round-trip.
func TestLargestJobFits(t *testing.T) {
	const maxTask = 1 << 20
	payload := bytes.Repeat([]byte{0xff, 0x1b, 0x40}, maxTask/3+1)[:maxTask]
	doc := `{"lines":[{"text":"` + strings.Repeat("<", maxTask-len(`{"lines":[{"text":""}]}`)) + `"}]}`
	for _, j := range []*wire.Job{
		{TaskNo: strings.Repeat("T", 128), Printer: strings.Repeat("p", 64), Priority: spool.PriorityUrgent, Payload: payload, Timeout: "23h59m59s"},
		{TaskNo: strings.Repeat("T", 128), Printer: strings.Repeat("p", 64), Priority: spool.PriorityUrgent, Document: json.RawMessage(doc), Timeout: "23h59m59s"},
	} {
		b, err := wire.Encode(j)
		if err != nil {
			t.Fatalf("the largest job does not encode: %v", err)
		}
		m, err := wire.Decode(b)
		if err != nil {
			t.Fatalf("the largest job (%d bytes) does not decode: %v", len(b), err)
		}
		if got := m.(*wire.Job); !bytes.Equal(got.Payload, j.Payload) || !bytes.Equal(got.Document, j.Document) {
			t.Fatal("the largest job changed in the round trip")
		}
		t.Logf("largest job frame: %d bytes of %d", len(b), wire.MaxFrameBytes)
	}
}

// TestBatchFits ensures an events batch of 1,000 events, every field at
// its longest and each carrying a job summary, is well under the limit
// (the figure MaxFrameBytes's doc comment quotes).
func TestBatchFits(t *testing.T) {
	e := &wire.Events{Batch: strings.Repeat("b", 64)}
	for i := range 1000 {
		e.Events = append(e.Events, wire.Event{
			TaskNo: fmt.Sprintf("%s%04d", strings.Repeat("T", 124), i), N: 1 << 21,
			State: spool.StateRetryWait, Reason: strings.Repeat("R", 128), Printer: strings.Repeat("p", 64),
			Target: strings.Repeat("q", 64), Confirmation: spool.ConfirmDelivered, Attempts: 1 << 30,
			PossibleDuplicate: true, Origin: spool.OriginManager, At: time.Date(2026, 11, 30, 23, 59, 59, 999999999, time.FixedZone("", -9*3600-30*60)),
			Job: &wire.JobInfo{Printer: strings.Repeat("p", 64), Priority: spool.PriorityUrgent, Origin: spool.OriginManager, Size: 1 << 20, SHA256: strings.Repeat("f", 64)},
		})
	}
	if err := e.Ordered(); err != nil {
		t.Fatal(err)
	}
	b, err := wire.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1<<20 {
		t.Fatalf("1,000 longest events are %d bytes, over 1 MiB", len(b))
	}
	t.Logf("1,000 longest events: %d bytes", len(b))
}

// TestEncodeDoesNotEscapeHTML ensures "<", ">" and "&" stay as they are,
// so a document full of them does not grow sixfold past the limit.
func TestEncodeDoesNotEscapeHTML(t *testing.T) {
	b, err := wire.Encode(&wire.LogLines{ID: "t", Lines: []string{"a<b>&c"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"a<b>&c"`)) {
		t.Fatalf("frame %s escapes HTML", b)
	}
}

// TestEncodeErrorWraps ensures Encode's error says it is encoding and
// unwraps to the *FrameError.
func TestEncodeErrorWraps(t *testing.T) {
	_, err := wire.Encode(&wire.Reprint{ID: "c"})
	var fe *wire.FrameError
	if !errors.As(err, &fe) || err.Error() != "encode: reprint frame: task_no: is required" {
		t.Fatalf("error %q", err)
	}
}

// TestEveryOriginTravels ensures an event of every origin a task can have
// (spool.Origins) encodes and decodes, in the event and in its job summary:
// the spool accepted raw tasks long before the protocol did, and the link
// dropped every event of them as invalid (found by the chaos run).
func TestEveryOriginTravels(t *testing.T) {
	for _, o := range spool.Origins() {
		ev := wire.Event{TaskNo: "T-" + string(o), N: 1, State: spool.StateAccepted, Printer: "kitchen", Origin: o,
			At: time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC),
			Job: &wire.JobInfo{Printer: "kitchen", Priority: spool.PriorityNormal, Origin: o, Size: 3,
				SHA256: strings.Repeat("ab", 32)}}
		b, err := wire.Encode(&wire.Events{Batch: "b1", Events: []wire.Event{ev}})
		if err != nil {
			t.Fatalf("origin %s: %v", o, err)
		}
		m, err := wire.Decode(b)
		if err != nil {
			t.Fatalf("origin %s: decode: %v", o, err)
		}
		got := m.(*wire.Events).Events[0]
		if got.Origin != o || got.Job == nil || got.Job.Origin != o {
			t.Errorf("origin %s came back as %+v", o, got)
		}
	}
}

// TestNoPrinters ensures an agent with no printer configured can say so (as a
// new store does before its printers are set up): hello and printers with no
// printers, nil or empty, encode as [] and decode back, while a frame without
// the field is still refused.
func TestNoPrinters(t *testing.T) {
	for _, m := range []wire.Message{
		&wire.Hello{AgentID: "a", Version: "1"},
		&wire.Hello{AgentID: "a", Version: "1", Printers: []wire.Printer{}},
		&wire.Printers{},
		&wire.Printers{Printers: []wire.Printer{}},
	} {
		b, err := wire.Encode(m)
		if err != nil {
			t.Errorf("Encode(%#v): %v, want a frame with no printers", m, err)
			continue
		}
		if !strings.Contains(string(b), `"printers":[]`) {
			t.Errorf("Encode(%#v) = %s, want \"printers\":[]", m, b)
		}
		got, err := wire.Decode(b)
		if err != nil {
			t.Errorf("Decode(%s): %v", b, err)
			continue
		}
		var ps []wire.Printer
		switch g := got.(type) {
		case *wire.Hello:
			ps = g.Printers
		case *wire.Printers:
			ps = g.Printers
		}
		if ps == nil || len(ps) != 0 {
			t.Errorf("Decode(%s) printers %#v, want an empty list", b, ps)
		}
	}
	h := &wire.Hello{AgentID: "a", Version: "1"}
	if _, err := wire.Encode(h); err != nil || h.Printers != nil {
		t.Errorf("Encode: %v; the caller's hello now has printers %#v, want it untouched", err, h.Printers)
	}
	for _, frame := range []string{`{"type":"hello","agent_id":"a","version":"1","outbox":0}`, `{"type":"printers"}`} {
		_, err := wire.Decode([]byte(frame))
		if fe := frameError(t, err); fe.Code != wire.CodeInvalid || fe.Field != "printers" {
			t.Errorf("Decode(%s): %v, want invalid at printers", frame, err)
		}
	}
}
