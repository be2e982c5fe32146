package wire_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"printgate/sync/wire"
)

// FuzzDecode ensures Decode never panics; that whatever it accepts
// re-encodes, decodes to the same value and re-encodes to the same bytes
// (so nothing accepted is lost or changed in transit); and that whatever
// it refuses comes with a *FrameError of a known code whose reply frame
// can be sent. Seeds: a valid frame of every type and some near misses.
func FuzzDecode(f *testing.F) {
	for _, g := range golden {
		f.Add([]byte(g.frame))
	}
	for _, s := range []string{
		`{"type":"job","task_no":"A","printer":"k","document":{"lines":[{"text":"a","text":null}]}}`,
		"{ \"type\" : \"job\" ,\n \"task_no\":\"A\", \"printer\":\"k\", \"document\" : {\t\"lines\" : [ {\"text\" : \"a b\"} ] } }",
		`{"type":"job","task_no":"A","printer":"k","payload":"AQI=","TASK_NO":"B"}`,
		`{"type":"events","batch":"b","events":[{"task_no":"A","n":1,"state":"QUEUED","at":"2026-11-30T12:00:00+05:30"}]}`,
		`{"type":"logs_stop","id":"t","id":"u"}`,
		`{"type":"welcome","store_id":"s","server_time":"2026-11-30T12:00:00.123456789-09:30"}`,
		`{"type":"log_lines","id":"\u0000","lines":["\ud800","\u2028"]}`,
		`{"type":"job","task_no":"A","printer":"k","payload":"AQ\nI="}`,
		`[[[[[[[[]]]]]]]]`, `{"type":"hello"} {}`, `{"type":`,
	} {
		f.Add([]byte(s))
	}
	codes := []string{wire.CodeBadJSON, wire.CodeTooLarge, wire.CodeUnknownType, wire.CodeUnknownField, wire.CodeInvalid}
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := wire.Decode(frame)
		if err != nil {
			var fe *wire.FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is %T, not a *FrameError", err, err)
			}
			if !slices.Contains(codes, fe.Code) {
				t.Fatalf("error code %q is not one of %v", fe.Code, codes)
			}
			if fe.Type != "" && !slices.Contains(wire.Types(), fe.Type) {
				t.Fatalf("error names type %q, which is not a message type", fe.Type)
			}
			if _, err := wire.Encode(fe.Reply()); err != nil {
				t.Fatalf("the reply to %v cannot be sent: %v", fe, err)
			}
			return
		}
		b, err := wire.Encode(m)
		if err != nil {
			t.Fatalf("Decode accepted %q as %#v, but Encode refuses it: %v", frame, m, err)
		}
		m2, err := wire.Decode(b)
		if err != nil {
			t.Fatalf("Encode wrote %q, which Decode refuses: %v", b, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the message:\n%#v\n%#v", m, m2)
		}
		b2, err := wire.Encode(m2)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("re-encoding is not stable:\n%s\n%s (%v)", b, b2, err)
		}
	})
}
