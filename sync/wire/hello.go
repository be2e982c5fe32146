package wire

import (
	"fmt"
	"time"
)

// Hello is the agent's first frame on a new connection: who it is and what
// it has. Requires agent_id, version and printers, which may be empty (an
// agent installed before any printer is configured still connects, so the
// cloud hears what it has); outbox is the outbox depth, 0 or more. Encode
// sends a nil Printers as [].
type Hello struct {
	AgentID  string    `json:"agent_id"`
	Version  string    `json:"version"`
	Printers []Printer `json:"printers"`
	Outbox   int       `json:"outbox"`
}

// Welcome is the cloud's answer to hello: the link is up. Requires both
// fields.
type Welcome struct {
	StoreID    string    `json:"store_id"`
	ServerTime time.Time `json:"server_time"`
}

// Printers is what the agent pushes on every printer state change: every
// configured printer with its state, not only the one that changed, so the
// cloud replaces its view and a lost or reordered frame leaves nothing
// stale. Requires printers, which may be empty (the last printer was
// removed); Encode sends a nil Printers as [].
type Printers struct {
	Printers []Printer `json:"printers"`
}

// Printer is one printer's name and state, in hello and printers frames.
// Both are required; State is one of PrinterStates.
type Printer struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// PrinterStates are the states a Printer may report, as in PROTOCOL.md §3
// (GET /api/v1/printers); UNKNOWN is a printer not yet read.
var PrinterStates = []string{"READY", "BUSY", "PAPER_OUT", "COVER_OPEN", "OFFLINE", "ERROR", "UNKNOWN"}

// Type is "hello".
func (*Hello) Type() string { return TypeHello }

// Type is "welcome".
func (*Welcome) Type() string { return TypeWelcome }

// Type is "printers".
func (*Printers) Type() string { return TypePrinters }

func (m *Hello) frame() any {
	return &struct {
		Type string `json:"type"`
		*Hello
	}{TypeHello, m}
}

func (m *Welcome) frame() any {
	return &struct {
		Type string `json:"type"`
		*Welcome
	}{TypeWelcome, m}
}

func (m *Printers) frame() any {
	return &struct {
		Type string `json:"type"`
		*Printers
	}{TypePrinters, m}
}

// forEncode returns a copy of m whose nil printers is an empty list, so
// that no printers is sent as [] rather than null (which Decode refuses).
func (m *Hello) forEncode() Message {
	if m.Printers != nil {
		return m
	}
	h := *m
	h.Printers = []Printer{}
	return &h
}

func (m *Printers) forEncode() Message {
	if m.Printers != nil {
		return m
	}
	return &Printers{Printers: []Printer{}}
}

// present checks, after decoding, that the frame carried printers: a
// missing field decodes as nil, an empty list as an empty slice.
func (m *Hello) present() *FrameError { return printersPresent(m.Printers) }

func (m *Printers) present() *FrameError { return printersPresent(m.Printers) }

func printersPresent(ps []Printer) *FrameError {
	if ps == nil {
		return invalid("printers", "is required; send [] when the agent has no printers")
	}
	return nil
}

func (m *Hello) check() *FrameError {
	if e := required("agent_id", m.AgentID); e != nil {
		return e
	}
	if e := required("version", m.Version); e != nil {
		return e
	}
	if m.Outbox < 0 {
		return invalid("outbox", fmt.Sprintf("is %d; a depth is 0 or more", m.Outbox))
	}
	return checkPrinters(m.Printers)
}

func (m *Welcome) check() *FrameError {
	if e := required("store_id", m.StoreID); e != nil {
		return e
	}
	if m.ServerTime.IsZero() {
		return invalid("server_time", "is required")
	}
	return nil
}

func (m *Printers) check() *FrameError { return checkPrinters(m.Printers) }

func checkPrinters(ps []Printer) *FrameError {
	for i, p := range ps {
		at := fmt.Sprintf("printers[%d].", i)
		if e := required(at+"name", p.Name); e != nil {
			return e
		}
		if e := oneOf(at+"state", p.State, false, PrinterStates...); e != nil {
			return e
		}
	}
	return nil
}
