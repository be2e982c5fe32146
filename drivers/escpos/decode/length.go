package decode

// The command-length table: how many bytes each ESC, FS, GS and DLE command
// takes, by the Epson and clone references (docs/ESCPOS.md §1, §3), with the firmware's
// own end rules. It is the one table the decoder (and so the emulator and
// the manager page's preview), the driver's resynchronisation after a lost
// link (escpos.DanglingBound) and the raw port's filter frame commands by,
// and what decides the allow-list: a command it does not know never reaches
// a printer (Known).

// UnknownLength is what CommandLength gives an ESC, FS, GS or DLE DC4
// command the table does not know.
const UnknownLength = -1

// maxLength caps the lengths CommandLength computes, so that no declared
// size overflows an int; no command a printer takes is that long.
const maxLength = 1 << 30

// CommandLength is the full length of the ESC, FS, GS or DLE command at
// the start of b (b not empty), UnknownLength for an ESC, FS, GS or DLE
// DC4 command the table does not know, or 0 for text and single-byte
// controls. Bytes b
// does not hold yet read as NUL, so for a command b holds only part of, the
// result is more than len(b) (wait for more bytes), and it is the length
// the command has if the stream continued with NULs (which is how the
// driver completes a command a lost link cut off).
func CommandLength(b []byte) int {
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

// Known reports whether the command at the start of b (its first two bytes
// are enough; three for DLE DC4) is one the table frames, true for
// anything that is not an ESC, FS, GS or DLE command. A command it does not know has no length the
// agent can trust: a printer whose firmware frames it longer would take
// the next bytes (the next ticket, the agent's probe) as its arguments, so
// such a command must not reach a printer.
func Known(b []byte) bool {
	return len(b) == 0 || CommandLength(b) != UnknownLength
}

// at returns b[i], or 0 (a NUL) when b ends before i.
func at(b []byte, i int) int {
	if i < len(b) {
		return int(b[i])
	}
	return 0
}

// le16At is the little-endian length at b[i:i+2].
func le16At(b []byte, i int) int { return at(b, i) | at(b, i+1)<<8 }

// mulClamp multiplies two non-negative lengths, saturating at maxLength.
func mulClamp(a, b int) int {
	if a != 0 && b > maxLength/a {
		return maxLength
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

func escLength(b []byte) int {
	switch at(b, 1) {
	case '@', '2', '<', 'L', 'S', 0x0C, 'i', 'm', 'v':
		return 2 // ESC v: transmit paper sensor status
	case '!', 'E', '-', 'a', 't', 'd', 'J', 'G', 'M', 'R', ' ', 'V', '{', 'r', '%',
		'?', 'U', 'T', '3', 'e', 'K', '=', 'j', 'C', 'u':
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
	case 'D': // horizontal tab stops
		// An Epson ends them at a NUL (taken with them), after 32, or at a
		// value not above the one before it, which is then read as data:
		// ESC D 0x50 followed by GS ( E runs GS ( E.
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
	return UnknownLength
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
			if i >= maxLength {
				return maxLength
			}
		}
		return i
	case 'g': // NV user memory: FS g 1 (write) and FS g 2 (read)
		switch at(b, 2) {
		case '1':
			return 10 + le16At(b, 8)
		case '2':
			return 10
		}
	}
	return UnknownLength
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
	case 'g': // maintenance counter: GS g 0 m nL nH, GS g 2 m nL nH
		if c := at(b, 2); c == '0' || c == '2' {
			return 6
		}
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
		return 7 + int(min(n, maxLength))
	case '(': // GS ( fn pL pH data: H barrier, k symbols, L graphics, ...
		return 5 + le16At(b, 3)
	}
	return UnknownLength
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
		switch at(b, 2) {
		case 1, 2:
			return 5 // DLE DC4 1 m t: drawer pulse; DLE DC4 2 1 8: power off
		case 7:
			return 4 // DLE DC4 7 m: transmit a status in real time
		case 8:
			return 10 // DLE DC4 8 1 3 20 1 6 2 8: clear the buffers
		}
		// Other functions (the real-time buzzer, for one) take more
		// arguments on some models than on others.
		return UnknownLength
	}
	return 1 // a lone DLE is an ignored control byte
}
