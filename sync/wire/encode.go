package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// Encode writes m as one frame with its "type" first. It refuses, with a
// *FrameError, a message Decode would refuse (a required field missing, a
// value outside its set) and a frame over MaxFrameBytes, so that nothing
// the peer must reject is ever sent. Text is not HTML-escaped ("<" stays
// "<"), which keeps frames and documents at their natural size.
func Encode(m Message) ([]byte, error) {
	if m == nil || reflect.ValueOf(m).IsNil() {
		return nil, fmt.Errorf("encode: %w", &FrameError{Code: CodeInvalid, Reason: "no message (nil)"})
	}
	if fe := m.check(); fe != nil {
		fe.Type = m.Type()
		return nil, fmt.Errorf("encode: %w", fe)
	}
	if n, ok := m.(interface{ forEncode() Message }); ok {
		m = n.forEncode()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m.frame()); err != nil {
		return nil, fmt.Errorf("encode %s frame: %w", m.Type(), err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > MaxFrameBytes {
		return nil, fmt.Errorf("encode: %w", &FrameError{Type: m.Type(), Code: CodeTooLarge,
			Reason: fmt.Sprintf("would be %d bytes, over the %d byte limit", len(out), MaxFrameBytes)})
	}
	return out, nil
}
