package decode

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// frameForget is how many commands Unfinished runs before it drops what the
// Decoder kept of the paper. Only command lengths matter to it; the modes
// that change them (Kanji mode, FS C) are kept, so the framing is the same
// as one Decoder over the whole stream, in bounded memory.
const frameForget = 1024

// Partial is a command a stream ends inside: a printer would wait for the
// rest of it and take the first bytes of whatever comes next (the next job,
// the agent's completion probe) as its arguments.
type Partial struct {
	// Offset is where the command starts in the stream.
	Offset int
	// Head is its first bytes, at most 16.
	Head []byte
	// Len is how many of its bytes the stream holds.
	Len int
}

// Name is the command in the usual notation, e.g. "GS ( k" or "ESC *",
// or "a double-byte character" for the first byte of one in Kanji mode.
func (p Partial) Name() string {
	if len(p.Head) == 0 {
		return ""
	}
	var prefix string
	switch p.Head[0] {
	case 0x1B:
		prefix = "ESC"
	case 0x1C:
		prefix = "FS"
	case 0x1D:
		prefix = "GS"
	case 0x10:
		prefix = "DLE"
	default:
		return "a double-byte character"
	}
	parts := []string{prefix}
	n := 2
	if len(p.Head) > 1 && p.Head[1] == '(' {
		n = 3 // GS ( k, ESC ( A, FS ( L: the function letter names it
	}
	for _, c := range p.Head[1:min(n, len(p.Head))] {
		if c > 0x20 && c < 0x7F {
			parts = append(parts, string(rune(c)))
		} else {
			parts = append(parts, fmt.Sprintf("0x%02x", c))
		}
	}
	return strings.Join(parts, " ")
}

// String names the command with its offset and first bytes, for an answer
// a person reads: "GS ( k at offset 12 (1d 28 6b 00 01)".
func (p Partial) String() string {
	b := hex.EncodeToString(p.Head)
	var sb strings.Builder
	for i := 0; i < len(b); i += 2 {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(b[i : i+2])
	}
	if p.Len > len(p.Head) {
		sb.WriteString(" …")
	}
	return fmt.Sprintf("%s at offset %d (%s)", p.Name(), p.Offset, sb.String())
}

// Unfinished reports the command stream ends inside, framed as Step frames
// commands for a printer described by o (the framing of the emulator, of
// the raw port and of the manager page's preview), or false when stream
// ends between commands. Its memory is bounded whatever the stream holds.
func Unfinished(stream []byte, o Options) (Partial, bool) {
	d := NewWith(o)
	d.feedLeft = 0 // blank rows of feeds are paper, not framing
	steps := 0
	off := 0
	for off < len(stream) {
		n := d.Step(stream[off:])
		if n == 0 {
			rest := stream[off:]
			return Partial{Offset: off, Head: append([]byte(nil), rest[:min(16, len(rest))]...), Len: len(rest)}, true
		}
		off += n
		if steps++; steps >= frameForget {
			d.forget()
			steps = 0
		}
	}
	return Partial{}, false
}

// forget drops what the decoder keeps of the paper (the ticket so far, the
// row being printed) and keeps its modes: what a framing-only reader needs.
func (d *Decoder) forget() {
	d.cur = Ticket{}
	d.band, d.raster = -1, -1
	d.spans, d.tail, d.lineLen, d.lineCols = nil, d.tail[:0], 0, 0
}
