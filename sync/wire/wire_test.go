package wire_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"printgate/sync/wire"
)

// TestGoldenCoversEveryType ensures the golden frames (and so the round
// trip, the fuzz seeds and the rejection tests built on them) cover every
// message type, and that each type says its own name.
func TestGoldenCoversEveryType(t *testing.T) {
	var seen []string
	for _, g := range golden {
		if !slices.Contains(seen, g.msg.Type()) {
			seen = append(seen, g.msg.Type())
		}
	}
	slices.Sort(seen)
	if want := wire.Types(); !slices.Equal(seen, want) {
		t.Fatalf("golden frames cover %v; the types are %v", seen, want)
	}
	if len(seen) != 15 {
		t.Fatalf("%d message types; §5 plus error and revoke make 15", len(seen))
	}
}

// TestDecodeGolden ensures each golden frame decodes to its message.
func TestDecodeGolden(t *testing.T) {
	for _, g := range golden {
		m, err := wire.Decode([]byte(g.frame))
		if err != nil {
			t.Errorf("Decode(%s): %v", g.frame, err)
			continue
		}
		if !reflect.DeepEqual(m, g.msg) {
			t.Errorf("Decode(%s)\n got %#v\nwant %#v", g.frame, m, g.msg)
		}
	}
}

// TestEncodeGolden ensures each message encodes to its golden frame byte
// for byte: "type" first, fields in the order of §5, nothing HTML-escaped.
func TestEncodeGolden(t *testing.T) {
	for _, g := range golden {
		b, err := wire.Encode(g.msg)
		if err != nil {
			t.Errorf("Encode(%s): %v", g.msg.Type(), err)
			continue
		}
		if string(b) != g.frame {
			t.Errorf("Encode(%s)\n got %s\nwant %s", g.msg.Type(), b, g.frame)
		}
	}
}

// TestRoundTrip ensures every message type survives Encode then Decode
// unchanged, and that a decoded frame re-encodes to the same bytes.
func TestRoundTrip(t *testing.T) {
	for _, g := range golden {
		b, err := wire.Encode(g.msg)
		if err != nil {
			t.Fatalf("Encode(%s): %v", g.msg.Type(), err)
		}
		m, err := wire.Decode(b)
		if err != nil {
			t.Fatalf("Decode(%s): %v", b, err)
		}
		if !reflect.DeepEqual(m, g.msg) {
			t.Errorf("%s round trip\n got %#v\nwant %#v", g.msg.Type(), m, g.msg)
		}
		again, err := wire.Encode(m)
		if err != nil || !bytes.Equal(again, b) {
			t.Errorf("%s re-encoded to %s (%v), want %s", g.msg.Type(), again, err, b)
		}
	}
}

// TestDecodeCompactsDocument ensures a job's document is kept compacted and
// that the decoded message does not alias the frame's bytes.
func TestDecodeCompactsDocument(t *testing.T) {
	frame := []byte("{\"type\":\"job\",\"task_no\":\"A\",\"printer\":\"k\",\"document\":\n  { \"lines\" : [ {\"text\" : \"a  b\"} ] }\n}")
	m, err := wire.Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	for i := range frame {
		frame[i] = 'x'
	}
	if got, want := string(m.(*wire.Job).Document), `{"lines":[{"text":"a  b"}]}`; got != want {
		t.Fatalf("document %s, want %s", got, want)
	}
}

// TestTypesMatchConstants ensures each message's Type is the constant of
// the same name and Types lists them sorted.
func TestTypesMatchConstants(t *testing.T) {
	for _, c := range []struct {
		m    wire.Message
		want string
	}{
		{&wire.Hello{}, "hello"}, {&wire.Welcome{}, "welcome"}, {&wire.Job{}, "job"},
		{&wire.JobAck{}, "job_ack"}, {&wire.Events{}, "events"}, {&wire.EventsAck{}, "events_ack"},
		{&wire.Reprint{}, "reprint"}, {&wire.Cancel{}, "cancel"}, {&wire.CommandResult{}, "command_result"},
		{&wire.LogsTail{}, "logs_tail"}, {&wire.LogLines{}, "log_lines"}, {&wire.LogsStop{}, "logs_stop"},
		{&wire.Printers{}, "printers"}, {&wire.Error{}, "error"}, {&wire.Revoke{}, "revoke"},
	} {
		if got := c.m.Type(); got != c.want {
			t.Errorf("%T.Type() = %q, want %q", c.m, got, c.want)
		}
	}
	if ts := wire.Types(); !slices.IsSorted(ts) {
		t.Errorf("Types() = %v, not sorted", ts)
	}
}
