package escpos

import (
	"math"
	"time"
)

// Serial timing used by JobTimeout.
const (
	// BitsPerByte is what one byte costs on a serial line framed 8N1: a
	// start bit, 8 data bits and a stop bit.
	BitsPerByte = 10
	// WireSafetyFactor stretches the transmission time JobTimeout allows,
	// to cover other framings (8E1 and 8N2 are 11 bits, 8E2 12), flow
	// control pauses (the printer holds CTS or sends XOFF while its buffer
	// is full) and the printer's own slowdowns.
	WireSafetyFactor = 1.5
)

// JobTimeout returns how long one Print of jobBytes bytes may take on a
// printer reached over a serial line at baud bits per second: base (what a
// job needs on a fast link: the completion barrier, the time to print) plus
// the time the bytes take on the wire (BitsPerByte bits per byte) stretched
// by WireSafetyFactor. A fixed timeout would cut a large job (a logo, a
// long ticket) off while it is still being sent at 9600 baud, and the
// outcome-unknown reprint would be cut off again, in a loop: 100 kB at
// 9600 baud are 104 s on the wire, so JobTimeout(30*time.Second, 100_000,
// 9600) is 30 s + 156 s.
//
// jobBytes should count everything the device may send before the job's
// barrier: the job plus Device.ResyncPending() (after a connection died
// inside a command, up to MaxDanglingBound NULs go first, 68 s at 9600
// baud). The few bytes of status queries and probes are covered by the
// safety factor.
//
// baud <= 0 means not a serial line (TCP, USB, the Windows spooler, whose
// speed is not the limit): the result is base. The result saturates
// instead of overflowing.
func JobTimeout(base time.Duration, jobBytes int, baud int) time.Duration {
	if baud <= 0 || jobBytes <= 0 {
		return base
	}
	wire := float64(jobBytes) * BitsPerByte / float64(baud) * WireSafetyFactor * float64(time.Second)
	if total := float64(base) + wire; total < math.MaxInt64 {
		return time.Duration(total)
	}
	return time.Duration(math.MaxInt64)
}
