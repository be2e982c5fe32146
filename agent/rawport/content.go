package rawport

// cmdKind is what one command does to a job (see the content rules at the
// top of conn.go).
type cmdKind int

const (
	// kindPrint puts something on paper or moves it: text, a line feed, an
	// image, a barcode, a feed, and every command not known to be one of
	// the others (an unknown command is taken for content, never dropped).
	kindPrint cmdKind = iota
	// kindSetting only sets a mode for what follows: alone, it is no job.
	kindSetting
	// kindAction is content that prints nothing: a drawer pulse or a beep.
	// After a cut it leaves the job whole (cut, then open the drawer).
	kindAction
)

// classify tells what cmd, one whole command as the decoder framed it, is.
func classify(cmd []byte) cmdKind {
	if len(cmd) < 2 {
		return kindPrint
	}
	switch cmd[0] {
	case 0x1B: // ESC
		switch cmd[1] {
		case ' ', '!', '$', '%', '-', '2', '3', '=', 'D', 'E', 'G', 'L', 'M', 'R', 'S', 'T', 'U', 'V', '\\', 'a', 'c', 't', '{':
			return kindSetting
		case 'p', 'B': // drawer pulse; beep (ESC B n t)
			return kindAction
		case '(':
			if len(cmd) >= 3 && cmd[2] == 'A' { // ESC ( A: beep
				return kindAction
			}
		}
	case 0x1C: // FS
		switch cmd[1] {
		case '&', '.', '!', '-', 'C', 'S', 'W':
			return kindSetting
		}
	case 0x1D: // GS
		switch cmd[1] {
		case '!', 'B', 'H', 'L', 'P', 'W', 'b', 'f', 'h', 'w':
			return kindSetting
		case '(':
			// GS ( k pL pH cn fn: fn 65..70 set a 2D symbol's model, size
			// and error correction; storing (80) and printing (81) are
			// content.
			if len(cmd) >= 7 && cmd[2] == 'k' && cmd[6] >= 65 && cmd[6] <= 70 {
				return kindSetting
			}
		}
	case 0x10: // DLE DC4 1 m t: a drawer pulse in real time
		if len(cmd) >= 3 && cmd[1] == 0x14 && cmd[2] == 1 {
			return kindAction
		}
	}
	return kindPrint
}
