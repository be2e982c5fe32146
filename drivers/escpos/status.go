package escpos

import (
	"errors"
	"fmt"
	"strings"
)

// Status is what the printer said about itself through DLE EOT n (n = 1..4).
// Only the groups whose bit is set in Answered were asked and answered; the
// other fields of a group not asked are false, which must not be read as
// "healthy" (see Has).
type Status struct {
	// Answered has bit n set when DLE EOT n was answered.
	Answered uint8
	// Raw holds the answer bytes, Raw[n-1] for DLE EOT n.
	Raw [4]byte

	// DLE EOT 1, printer status.
	DrawerPinHigh      bool // bit 2: drawer kick-out connector pin 3 high
	Offline            bool // bit 3
	WaitingForRecovery bool // bit 5: waiting for online recovery
	FeedButton         bool // bit 6: paper feed button pressed

	// DLE EOT 2, offline cause.
	CoverOpen       bool // bit 2
	FeedingByButton bool // bit 3
	PaperEndStop    bool // bit 5: printing stopped at paper end
	Error           bool // bit 6: an error occurred (see DLE EOT 3)

	// DLE EOT 3, error cause.
	RecoverableError     bool // bit 2
	AutocutterError      bool // bit 3
	UnrecoverableError   bool // bit 5
	AutoRecoverableError bool // bit 6: e.g. head too hot, clears by itself

	// DLE EOT 4, paper roll sensor.
	PaperNearEnd bool // bits 2+3
	PaperOut     bool // bits 5+6
}

// PrinterState is the printer state the agent reports (PROTOCOL.md §3
// /printers): one word a manager can act on.
type PrinterState string

// The printer states of PROTOCOL.md §3.
const (
	StateReady     PrinterState = "READY"
	StateBusy      PrinterState = "BUSY"
	StatePaperOut  PrinterState = "PAPER_OUT"
	StateCoverOpen PrinterState = "COVER_OPEN"
	StateOffline   PrinterState = "OFFLINE"
	StateError     PrinterState = "ERROR"
)

// Fixed bits of every DLE EOT answer: 0xx1xx10.
const (
	statusFixedMask = 0x93
	statusFixedBits = 0x12
	// An ASB packet starts with 0xx1xx00 and its other three bytes have bit 4
	// clear, so neither can pass for a DLE EOT answer.
	asbFirstBits = 0x10
)

// IsStatusByte reports whether b has the fixed bits of a DLE EOT answer.
func IsStatusByte(b byte) bool { return b&statusFixedMask == statusFixedBits }

// isASBHeader reports whether b can open a 4-byte automatic status back packet.
func isASBHeader(b byte) bool { return b&statusFixedMask == asbFirstBits }

// isTransmitStatus reports whether b can be a GS r answer: bits 4 and 7 are
// fixed 0, which tells it from DLE EOT answers, ASB headers, GS I and GS ( H
// frames.
func isTransmitStatus(b byte) bool { return b&0x90 == 0 }

// DecodeStatus decodes the answer b to DLE EOT n into a Status holding that
// one group.
func DecodeStatus(n int, b byte) (Status, error) {
	var s Status
	err := s.Decode(n, b)
	return s, err
}

// Decode merges the answer b to DLE EOT n into s, replacing that group. It
// rejects bytes without the fixed bits, so a stray byte (an ASB packet, a GS
// r answer, line noise) is never read as a status.
func (s *Status) Decode(n int, b byte) error {
	if n < 1 || n > 4 {
		return fmt.Errorf("escpos: DLE EOT n=%d: want 1..4", n)
	}
	if !IsStatusByte(b) {
		return fmt.Errorf("escpos: DLE EOT %d answer 0x%02x: %w", n, b, ErrNotStatus)
	}
	bit := func(i uint) bool { return b&(1<<i) != 0 }
	switch n {
	case 1:
		s.DrawerPinHigh, s.Offline, s.WaitingForRecovery, s.FeedButton = bit(2), bit(3), bit(5), bit(6)
	case 2:
		s.CoverOpen, s.FeedingByButton, s.PaperEndStop, s.Error = bit(2), bit(3), bit(5), bit(6)
	case 3:
		s.RecoverableError, s.AutocutterError, s.UnrecoverableError, s.AutoRecoverableError = bit(2), bit(3), bit(5), bit(6)
	case 4:
		// Either bit of a pair is taken as the condition: some clones set only
		// one, and erring towards "paper end" only delays a print.
		s.PaperNearEnd, s.PaperOut = b&0x0C != 0, b&0x60 != 0
	}
	s.Answered |= 1 << n
	s.Raw[n-1] = b
	return nil
}

// Encode returns the byte a printer in status s answers to DLE EOT n, the
// inverse of Decode. The emulator answers with it.
func (s Status) Encode(n int) byte {
	b := byte(statusFixedBits)
	set := func(i uint, v bool) {
		if v {
			b |= 1 << i
		}
	}
	switch n {
	case 1:
		set(2, s.DrawerPinHigh)
		set(3, s.Offline)
		set(5, s.WaitingForRecovery)
		set(6, s.FeedButton)
	case 2:
		set(2, s.CoverOpen)
		set(3, s.FeedingByButton)
		set(5, s.PaperEndStop)
		set(6, s.Error)
	case 3:
		set(2, s.RecoverableError)
		set(3, s.AutocutterError)
		set(5, s.UnrecoverableError)
		set(6, s.AutoRecoverableError)
	case 4:
		if s.PaperNearEnd {
			b |= 0x0C
		}
		if s.PaperOut {
			b |= 0x60
		}
	}
	return b
}

// Has reports whether DLE EOT n was answered.
func (s Status) Has(n int) bool { return n >= 1 && n <= 4 && s.Answered&(1<<n) != 0 }

// anyError reports an error cause from group 2 or 3.
func (s Status) anyError() bool {
	return s.Error || s.RecoverableError || s.AutocutterError || s.UnrecoverableError || s.AutoRecoverableError
}

// State maps the status to the agent's printer state. A status with no
// answers (a one-way printer that is reachable) is READY: the printer cannot
// say otherwise, and the confirmation level of each job tells how much was
// proven. Paper out wins over cover open over error, because that is the
// order in which someone at the store must act.
func (s Status) State() PrinterState {
	switch {
	case s.PaperOut || s.PaperEndStop:
		return StatePaperOut
	case s.CoverOpen:
		return StateCoverOpen
	case s.anyError() || s.WaitingForRecovery:
		return StateError
	case s.FeedingByButton || s.FeedButton:
		return StateBusy
	case s.Offline:
		return StateOffline
	}
	return StateReady
}

// Err returns nil when the status allows printing, else the sentinel for
// what stops it (ErrPaperOut, ErrCoverOpen, ErrPrinterFault, ErrBusy,
// ErrOffline), in the order of State.
func (s Status) Err() error {
	switch s.State() {
	case StatePaperOut:
		return ErrPaperOut
	case StateCoverOpen:
		return ErrCoverOpen
	case StateError:
		return ErrPrinterFault
	case StateBusy:
		return ErrBusy
	case StateOffline:
		return ErrOffline
	}
	return nil
}

// String lists the raw answers and the conditions set, for logs.
func (s Status) String() string {
	if s.Answered == 0 {
		return "unknown"
	}
	var parts []string
	for n := 1; n <= 4; n++ {
		if s.Has(n) {
			parts = append(parts, fmt.Sprintf("%d=%02x", n, s.Raw[n-1]))
		}
	}
	flags := []struct {
		on   bool
		name string
	}{
		{s.Offline, "offline"}, {s.WaitingForRecovery, "waiting-recovery"}, {s.FeedButton, "feed-button"},
		{s.CoverOpen, "cover-open"}, {s.FeedingByButton, "feeding"}, {s.PaperEndStop, "paper-end-stop"},
		{s.Error, "error"}, {s.RecoverableError, "recoverable-error"}, {s.AutocutterError, "autocutter-error"},
		{s.UnrecoverableError, "unrecoverable-error"}, {s.AutoRecoverableError, "auto-recoverable-error"},
		{s.PaperNearEnd, "paper-near-end"}, {s.PaperOut, "paper-out"},
	}
	for _, f := range flags {
		if f.on {
			parts = append(parts, f.name)
		}
	}
	return string(s.State()) + " " + strings.Join(parts, " ")
}

// FilterFlowControl removes XON (0x11) and XOFF (0x13) from answers read on a
// serial line with software flow control. Neither byte can be a DLE EOT, GS r
// or ASB answer byte, so nothing real is lost. It filters in place.
func FilterFlowControl(p []byte) []byte {
	out := p[:0]
	for _, b := range p {
		if b != 0x11 && b != 0x13 {
			out = append(out, b)
		}
	}
	return out
}

// errIncomplete reports a frame cut short; more bytes may complete it.
var errIncomplete = errors.New("escpos: incomplete answer")

// maxIDLen bounds a GS I answer so line noise cannot grow a frame forever.
const maxIDLen = 80

// DecodeID decodes a GS I n (n = 65..69) answer framed as 5F … 00 at the
// start of p. It returns the text and the number of bytes the frame took.
// A frame not yet complete gives an error wrapping errIncomplete.
func DecodeID(p []byte) (string, int, error) {
	if len(p) == 0 {
		return "", 0, errIncomplete
	}
	if p[0] != 0x5F {
		return "", 0, fmt.Errorf("escpos: printer id answer starts 0x%02x, want 0x5f", p[0])
	}
	for i := 1; i < len(p); i++ {
		if p[i] == 0 {
			return string(p[1:i]), i + 1, nil
		}
		if i > maxIDLen {
			return "", 0, fmt.Errorf("escpos: printer id answer longer than %d bytes", maxIDLen)
		}
	}
	return "", 0, errIncomplete
}

// DecodeBarrier decodes a GS ( H fn48 answer 37 22 d1 d2 d3 d4 00 at the
// start of p and returns the process id and the frame length.
func DecodeBarrier(p []byte) ([4]byte, int, error) {
	var id [4]byte
	for i := 0; i < len(p) && i < 7; i++ {
		want := -1
		switch i {
		case 0:
			want = 0x37
		case 1:
			want = 0x22
		case 6:
			want = 0x00
		default:
			if p[i] < 0x20 || p[i] > 0x7E {
				return id, 0, fmt.Errorf("escpos: process id byte 0x%02x outside 0x20..0x7e", p[i])
			}
		}
		if want >= 0 && p[i] != byte(want) {
			return id, 0, fmt.Errorf("escpos: process id answer byte %d is 0x%02x, want 0x%02x", i, p[i], want)
		}
	}
	if len(p) < 7 {
		return id, 0, errIncomplete
	}
	copy(id[:], p[2:6])
	return id, 7, nil
}

// BarrierID derives the 4-byte GS ( H process id of job id: id in base 94,
// digits 0x20..0x7E, most significant first. Ids repeat only every 94⁴
// (about 78 million) jobs, so a late answer names its own job.
func BarrierID(id uint64) [4]byte {
	var d [4]byte
	for i := 3; i >= 0; i-- {
		d[i] = byte(0x20 + id%94)
		id /= 94
	}
	return d
}
