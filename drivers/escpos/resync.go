package escpos

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
// r.bound bytes into a command's arguments: that many NULs, then ESC @. When
// r.cut is set, part of a cut-off job may be on the paper, so a feed and
// partial cut follow: otherwise that fragment (a reprint's POSSIBLE
// DUPLICATE banner, say) would run into the next, genuine ticket, and a cook
// might skip it. After a lost status query nothing printed and no slip is
// wasted.
func resyncPreamble(r resyncDebt) []byte {
	b := make([]byte, r.bound, r.bound+6)
	b = append(b, 0x1B, '@')
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
// the start of b (unknownCommand when this parser does not know it), or 0
// for text and single-byte controls.
func commandLength(b []byte) int {
	switch b[0] {
	case 0x1B:
		return escLength(b)
	case 0x1C:
		return fsLength(b)
	case 0x1D:
		return gsLength(b)
	case 0x10:
		return dleLength(b)
	}
	return 0
}

// at returns b[i], or 0 (the NUL the preamble will send) when b ends before i.
func at(b []byte, i int) int {
	if i < len(b) {
		return int(b[i])
	}
	return 0
}

// le16At is the little-endian length at b[i:i+2].
func le16At(b []byte, i int) int { return at(b, i) | at(b, i+1)<<8 }

// mulClamp multiplies two non-negative lengths, saturating above
// MaxDanglingBound so that nothing overflows a 32-bit int.
func mulClamp(a, b int) int {
	if a != 0 && b > (MaxDanglingBound+1)/a {
		return MaxDanglingBound + 1
	}
	return a * b
}

// nulTerminated is the length of a command whose data starts at b[start]
// and ends with a NUL within limit bytes, or else without one.
func nulTerminated(b []byte, start, limit, without int) int {
	for i := start; i < start+limit; i++ {
		if at(b, i) == 0 {
			return i + 1
		}
	}
	return without
}

// unknownCommand is the length the length functions give an ESC, FS or GS
// command they do not know.
const unknownCommand = -1

func escLength(b []byte) int {
	switch at(b, 1) {
	case '@', '2', '<', 'L', 'S', 0x0C, 'i', 'm':
		return 2
	case '!', 'E', '-', 'a', 't', 'd', 'J', 'G', 'M', 'R', ' ', 'V', '{', 'r', '%',
		'?', 'U', 'T', '3', 'e', 'K', '=', 'j':
		return 3
	case 'B', '$', '\\', 'c':
		return 4 // ESC B n t (clone buzzer), ESC $ nL nH, ESC c 3/4/5 n
	case 'p':
		return 5 // ESC p m t1 t2
	case 'W':
		return 10
	case '(': // ESC ( fn pL pH data (ESC ( A: Epson buzzer; ESC ( Y ...)
		return 5 + le16At(b, 3)
	case '*': // ESC * m nL nH data
		k := le16At(b, 3)
		if m := at(b, 2); m == 32 || m == 33 {
			return 5 + 3*k
		}
		return 5 + k
	case 'D': // horizontal tab stops: up to a NUL, a value not above the one before, or 32
		for i := 2; ; i++ {
			switch {
			case at(b, i) == 0:
				return i + 1
			case i > 2 && at(b, i) <= at(b, i-1):
				return i
			case i == 2+32:
				return i
			}
		}
	case '&': // ESC & y c1 c2 {x d[y*x]}...
		y, c1, c2 := at(b, 2), at(b, 3), at(b, 4)
		i := 5
		for ch := c1; ch <= c2 && ch <= 126; ch++ {
			i += 1 + y*at(b, i)
		}
		return i
	}
	return unknownCommand
}

func fsLength(b []byte) int {
	switch at(b, 1) {
	case '&', '.':
		return 2
	case '!', '-', 'W', 'C':
		return 3
	case 'S', 'p':
		return 4 // FS S n1 n2, FS p n m (print NV image)
	case '2': // user-defined Kanji: FS 2 c1 c2 d1..d72
		return 76
	case '(':
		return 5 + le16At(b, 3)
	case 'q': // define NV images: FS q n {xL xH yL yH d[x*y*8]}...
		i := 3
		for range at(b, 2) {
			i += 4 + mulClamp(mulClamp(le16At(b, i), le16At(b, i+2)), 8)
			if i > MaxDanglingBound {
				break
			}
		}
		return i
	}
	return unknownCommand
}

func gsLength(b []byte) int {
	switch at(b, 1) {
	case ':':
		return 2
	case '!', 'B', 'H', 'h', 'w', 'f', 'b', 'T', '/', 'j', 'r', 'I', 'a', 'E':
		return 3
	case 'V': // GS V m, or GS V m n for m >= 65
		if at(b, 2) >= 65 {
			return 4
		}
		return 3
	case 'L', 'W', 'P', '$', '\\':
		return 4
	case '^':
		return 5
	case 'k': // barcode: GS k m d1..dk NUL (m <= 6) or GS k m n d1..dn
		if at(b, 2) <= 6 {
			return nulTerminated(b, 3, 256, 258) // at most 255 data bytes
		}
		return 4 + at(b, 3)
	case 'v': // raster: GS v 0 m xL xH yL yH data
		return 8 + mulClamp(le16At(b, 4), le16At(b, 6))
	case '*': // download bit image: GS * x y d[x*y*8]
		return 4 + at(b, 2)*at(b, 3)*8
	case '8': // GS 8 L p1 p2 p3 p4 m fn data: a 4-byte length
		n := uint32(at(b, 3)) | uint32(at(b, 4))<<8 | uint32(at(b, 5))<<16 | uint32(at(b, 6))<<24
		return 7 + int(min(n, MaxDanglingBound))
	case '(': // GS ( fn pL pH data: H barrier, k symbols, L graphics, ...
		return 5 + le16At(b, 3)
	}
	return unknownCommand
}

func dleLength(b []byte) int {
	switch at(b, 1) {
	case 0x04: // DLE EOT n
		if n := at(b, 2); n == 7 || n == 8 {
			return 4
		}
		return 3
	case 0x05: // DLE ENQ n
		return 3
	case 0x14: // DLE DC4 fn ...
		if at(b, 2) == 8 {
			return 10
		}
		return 5
	}
	return 1 // a lone DLE is an ignored control byte
}
