package wire

// Error answers a frame that could not be decoded (or that this side
// cannot act on), so the sender's log says what it sent wrong; the
// connection stays up. Code is required: one of the Code constants for a
// frame Decode refused. FrameType is the refused frame's "type" when it
// could be read. It is not a Go error: it is the "error" message of §5.
type Error struct {
	Code      string `json:"code"`
	Message   string `json:"message,omitempty"`
	FrameType string `json:"frame_type,omitempty"`
}

// Revoke tells the agent its device token is revoked (the store removed
// this PC in the back office). The cloud closes the connection after it;
// the agent forgets the token and goes back to pairing (§6) instead of
// reconnecting. Reason is optional words for the agent's log.
type Revoke struct {
	Reason string `json:"reason,omitempty"`
}

// Reply is the "error" frame that answers the frame e refused: e's code,
// its one-line text and the refused frame's type.
func (e *FrameError) Reply() *Error {
	return &Error{Code: e.Code, Message: e.Error(), FrameType: e.Type}
}

// Type is "error".
func (*Error) Type() string { return TypeError }

// Type is "revoke".
func (*Revoke) Type() string { return TypeRevoke }

func (m *Error) frame() any {
	return &struct {
		Type string `json:"type"`
		*Error
	}{TypeError, m}
}

func (m *Revoke) frame() any {
	return &struct {
		Type string `json:"type"`
		*Revoke
	}{TypeRevoke, m}
}

func (m *Error) check() *FrameError { return required("code", m.Code) }

func (m *Revoke) check() *FrameError { return nil }
