package drivers

// XON and XOFF are the software flow control bytes (DC1, DC3). A printer in
// xonxoff mode sends them among its status answers; they must never reach the
// status decoder, which would read 0x13 as a status byte.
const (
	xon  = 0x11
	xoff = 0x13
)

// stripXonXoff removes XON and XOFF from b in place and returns the length of
// what is left.
func stripXonXoff(b []byte) int {
	n := 0
	for _, c := range b {
		if c == xon || c == xoff {
			continue
		}
		b[n] = c
		n++
	}
	return n
}

// Windows DCB bit fields (winbase.h). They live here rather than in the
// Windows file so the mapping from URL to DCB is tested on every OS.
const (
	dcbBinary          = 0x0001
	dcbParity          = 0x0002
	dcbOutxCtsFlow     = 0x0004
	dcbOutxDsrFlow     = 0x0008
	dcbDtrControlOn    = 0x0010
	dcbDtrHandshake    = 0x0020
	dcbTXContinueOnXof = 0x0080
	dcbOutX            = 0x0100
	dcbInX             = 0x0200
	dcbRtsControlOn    = 0x1000
	dcbRtsHandshake    = 0x2000
)

// commState is the part of a Windows DCB that printgate sets.
type commState struct {
	Baud     uint32
	Flags    uint32
	ByteSize uint8
	Parity   uint8 // NOPARITY 0, ODDPARITY 1, EVENPARITY 2
	StopBits uint8 // ONESTOPBIT 0, TWOSTOPBITS 2
	XonLim   uint16
	XoffLim  uint16
	XonChar  byte
	XoffChar byte
}

// commStateFor maps line settings to DCB fields. Hardware handshake lines
// that the mode does not use are held asserted rather than dropped, because
// many printers refuse to print while DSR or CTS from the host is low.
func commStateFor(l LineSettings) commState {
	s := commState{
		Baud:     uint32(l.Baud),
		Flags:    dcbBinary,
		ByteSize: uint8(l.DataBits),
		XonChar:  xon,
		XoffChar: xoff,
		// Ask the printer to resume/stop when our 4 KiB input queue is nearly
		// empty/full; status answers are tiny, so this never bites.
		XonLim:  2048,
		XoffLim: 512,
	}
	switch l.Parity {
	case ParityOdd:
		s.Parity = 1
		s.Flags |= dcbParity
	case ParityEven:
		s.Parity = 2
		s.Flags |= dcbParity
	}
	if l.StopBits == 2 {
		s.StopBits = 2
	}
	switch l.Flow {
	case FlowRTSCTS:
		s.Flags |= dcbOutxCtsFlow | dcbRtsHandshake | dcbDtrControlOn
	case FlowDSRDTR:
		s.Flags |= dcbOutxDsrFlow | dcbDtrHandshake | dcbRtsControlOn
	case FlowXONXOFF:
		s.Flags |= dcbOutX | dcbInX | dcbTXContinueOnXof | dcbDtrControlOn | dcbRtsControlOn
	default:
		s.Flags |= dcbDtrControlOn | dcbRtsControlOn
	}
	return s
}
