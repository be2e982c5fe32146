package escpos

import (
	"bytes"
	"fmt"
)

// scanned is what scanStream found in a Render output.
type scanned struct {
	commands map[string]int // command name -> count
	text     []byte         // every byte printed as text, LF included
}

// scanStream walks an ESC/POS stream command by command, knowing the length
// of every command Render may emit (data blocks included), and fails on
// anything else: an unknown command, or a control byte in text. It is the
// independent check that text can never smuggle a command to the printer.
func scanStream(b []byte) (*scanned, error) {
	s := &scanned{commands: map[string]int{}}
	// Printers look for real-time commands everywhere, even inside data, so
	// they must not appear anywhere in the stream.
	for _, rt := range [][]byte{{0x10, 0x04}, {0x10, 0x05}, {0x10, 0x14}} {
		if i := bytes.Index(b, rt); i >= 0 {
			return s, fmt.Errorf("real-time command % X at offset %d", rt, i)
		}
	}
	need := func(i, n int) error {
		if i+n > len(b) {
			return fmt.Errorf("truncated command at offset %d: % X", i, b[i:])
		}
		return nil
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c == '\n' || c >= 0x20 && c != 0x7F {
			s.text = append(s.text, c)
			i++
			continue
		}
		if err := need(i, 2); err != nil {
			return s, err
		}
		key := fmt.Sprintf("%02X %02X", c, b[i+1])
		n := 0 // total command length
		switch key {
		case "1B 40", "1C 26", "1C 2E":
			n = 2
		case "1B 74", "1B 21", "1D 21", "1B 45", "1B 2D", "1C 2D", "1C 43", "1D 42", "1B 61", "1B 64", "1D 68", "1D 77", "1D 48":
			n = 3
		case "1D 56":
			if err := need(i, 3); err != nil {
				return s, err
			}
			switch b[i+2] {
			case 0, 1:
				n = 3
			case 0x41, 0x42:
				n = 4
			default:
				return s, fmt.Errorf("unknown cut % X at offset %d", b[i:i+3], i)
			}
		case "1B 70":
			n = 5
		case "1B 42":
			n = 4
		case "1B 28", "1D 28":
			if err := need(i, 5); err != nil {
				return s, err
			}
			n = 5 + int(b[i+3]) + int(b[i+4])<<8
			key += fmt.Sprintf(" %02X", b[i+2])
		case "1D 6B":
			if err := need(i, 4); err != nil {
				return s, err
			}
			n = 4 + int(b[i+3])
		case "1D 76":
			if err := need(i, 8); err != nil {
				return s, err
			}
			n = 8 + (int(b[i+4])|int(b[i+5])<<8)*(int(b[i+6])|int(b[i+7])<<8)
		default:
			return s, fmt.Errorf("control byte %02X (as % X) in text or unknown command at offset %d", c, b[i:i+2], i)
		}
		if err := need(i, n); err != nil {
			return s, err
		}
		s.commands[key]++
		i += n
	}
	return s, nil
}
