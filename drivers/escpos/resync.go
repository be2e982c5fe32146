package escpos

import "printgate/drivers/escpos/decode"

// A printer does not see connection boundaries: when a connection dies in
// the middle of a command that takes arguments (GS v 0 and its raster data,
// GS ( k, GS ( H, GS k, ESC ( A, GS ! n, ...), the printer's parser keeps
// waiting for the missing arguments and takes them from the first bytes of
// the next connection, eating the start of the next job (its POSSIBLE
// DUPLICATE banner, or the GS ( H barrier that would have confirmed it).
//
// The driver therefore remembers, per printer, how many argument bytes a
// command cut off by a dead connection could still be waiting for, and
// before the next byte it sends (even a DLE EOT query, whose bytes are
// parsed in order as well as answered at once) it sends that many NULs
// followed by ESC @:
// the NULs complete whatever command was dangling (NUL raster data prints
// white, a NUL length is empty, NUL ends GS k and ESC D, NUL in text mode is
// ignored) and ESC @ then clears the print buffer and the modes.

// Bounds of DanglingBound.
const (
	// MinDanglingBound is the least DanglingBound returns: enough to finish
	// any of the short commands the session itself sends (GS ( H fn48 has
	// 10 bytes after its GS, DLE EOT n 2 after its DLE).
	MinDanglingBound = 16
	// MaxDanglingBound is the most DanglingBound returns, so that a job with
	// an absurd declared length cannot make the driver send megabytes of
	// NULs. A raster band of the widest paper (72 bytes × 255 rows) and the
	// largest QR code the encoder stores fit well below it; a job with a
	// longer command (GS 8 L, FS q) is resynchronised only this far.
	MaxDanglingBound = 64<<10 + 16
)

// unknownCommandBound is the bound given to an ESC, FS or GS command this
// parser does not know: the printer may expect more arguments than the
// usual one.
const unknownCommandBound = 16

// resyncDebt is what a printer is owed after a connection died with bytes
// not proven received: how many NULs complete any cut-off command, and
// whether part of a job may have printed and must be cut off.
type resyncDebt struct {
	bound int
	cut   bool
}

// owed reports whether anything must be sent.
func (r resyncDebt) owed() bool { return r.bound > 0 }

// merge is the debt of both r and o.
func (r resyncDebt) merge(o resyncDebt) resyncDebt {
	return resyncDebt{bound: max(r.bound, o.bound), cut: r.cut || o.cut}
}

// resyncPreamble is what resynchronises a printer whose parser may be up to
// r.bound bytes into a command's arguments: that many NULs, then ESC = 1
// (printer enabled) and ESC @. When
// r.cut is set, part of a cut-off job may be on the paper, so a feed and
// partial cut follow: otherwise that fragment (a reprint's POSSIBLE
// DUPLICATE banner, say) would run into the next, genuine ticket, and a cook
// might skip it. After a lost status query nothing printed and no slip is
// wasted.
func resyncPreamble(r resyncDebt) []byte {
	b := make([]byte, r.bound, r.bound+9)
	// ESC = 1 first: a payload cut off after its ESC = 0 (the printer
	// disabled, which only the ESC = 1 it ends with would have undone)
	// leaves a printer that ignores everything else, ESC @ included.
	b = append(b, 0x1B, '=', 1, 0x1B, '@')
	if r.cut {
		b = append(b, 0x1D, 'V', 66, 3)
	}
	return b
}

// printsSomething reports whether p, a job or query starting at a command
// boundary, holds anything that puts marks on paper: text, a line feed, or
// an image command. Status queries and the barrier do not.
func printsSomething(p []byte) bool {
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == 0x0A || c >= 0x20:
			return true
		case (c == 0x1D || c == 0x1B || c == 0x1C) && i+1 < len(p):
			switch {
			case c == 0x1D && p[i+1] == 'v', // GS v 0 raster
				c == 0x1B && p[i+1] == '*',                                  // ESC * bit image
				c == 0x1D && p[i+1] == '(' && i+2 < len(p) && p[i+2] == 'L', // GS ( L graphics
				c == 0x1D && p[i+1] == '8',                                  // GS 8 L graphics
				c == 0x1C && p[i+1] == 'p':                                  // FS p NV image
				return true
			}
		}
		n, _ := commandSpan(p[i:])
		i += n
	}
	return false
}

// DanglingBound returns the most bytes a printer could still be waiting for
// as a command's arguments if the stream were cut at any point inside job:
// the largest, over the commands of job, of the bytes that follow the
// command's first byte (its ESC, GS, FS or DLE). Text has none; an ESC, FS
// or GS command it does not know counts as 16. It expects job to start at a
// command boundary, as every job and query the driver writes does.
//
// A command that job itself leaves unfinished (job is what was written
// before a link failed) counts as the resync preamble will complete it:
// its missing header bytes read as NUL (a NUL length is empty, a NUL ends
// GS k and ESC D data), its missing data at the length the header declares.
//
// The result is never less than MinDanglingBound nor more than
// MaxDanglingBound.
func DanglingBound(job []byte) int {
	bound := MinDanglingBound
	for i := 0; i < len(job) && bound < MaxDanglingBound; {
		n, args := commandSpan(job[i:])
		bound = max(bound, args)
		i += n
	}
	return min(bound, MaxDanglingBound)
}

// unfinishedArgs is how many bytes the last command of job still lacks,
// framed as DanglingBound frames it (missing header bytes read as the NULs
// that will complete them), or 0 when job ends on a command boundary. A
// last command this parser does not know counts as complete (only a length
// it knows is worth the NULs, the reset and the cut that complete it), but
// a lone ESC, FS or GS is open. At most MaxDanglingBound.
func unfinishedArgs(job []byte) int {
	for i := 0; i < len(job); {
		n, args := commandSpan(job[i:])
		if i+n == len(job) {
			if n > 1 && commandLength(job[i:]) == unknownCommand {
				return 0
			}
			return min(max(0, args+1-n), MaxDanglingBound)
		}
		i += n
	}
	return 0
}

// commandSpan returns the length of the command at the start of b (at least
// 1, at most len(b)) and how many bytes follow its first byte once it is
// complete (at most MaxDanglingBound).
func commandSpan(b []byte) (n, args int) {
	total := commandLength(b)
	if total == 0 {
		return 1, 0 // text and single-byte controls (LF, HT, CR, NUL, ...)
	}
	if total == unknownCommand {
		// Parse on as if it had one parameter, as most do, but allow for more.
		return min(3, len(b)), unknownCommandBound
	}
	total = max(1, min(total, MaxDanglingBound+1))
	return min(total, len(b)), total - 1
}

// commandLength is the full length of the ESC, FS, GS or DLE command at
// the start of b by the one command-length table (decode.CommandLength):
// unknownCommand when it does not know it, 0 for text and single-byte
// controls; missing bytes read as the NULs the preamble will send.
func commandLength(b []byte) int { return decode.CommandLength(b) }

// unknownCommand is the length commandLength gives an ESC, FS or GS
// command the table does not know.
const unknownCommand = decode.UnknownLength
