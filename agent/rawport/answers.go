package rawport

import "printgate/drivers/escpos/decode"

// By default the port answers as a healthy printer: online, cover shut, no
// error, paper present, drawer closed (the job is spooled whatever the
// printer does). With Options.Status it answers the printer's state
// instead. The bytes are those of the emulator (drivers/printertest) with
// the same faults set; escpos.DecodeStatus reads them back as the state.

// statusAnswer is the answer to DLE EOT n (n = 1..4) for st: the fixed
// bits 0xx1xx10, plus, for n = 1, bit 2 "drawer pin 3 high" (drawer
// closed), which is what an idle Epson answers (0x16).
func statusAnswer(n byte, st PrinterStatus) byte {
	b := byte(0x12)
	set := func(mask byte, on bool) {
		if on {
			b |= mask
		}
	}
	switch n {
	case 1:
		set(0x04, true)
		set(0x08, st.Offline || st.PaperOut || st.CoverOpen || st.Error)
		set(0x20, st.Error)
	case 2:
		set(0x04, st.CoverOpen)
		set(0x20, st.PaperOut)
		set(0x40, st.Error)
	case 3:
		set(0x40, st.Error) // auto-recoverable: the agent cannot tell which
	case 4:
		set(0x0C, st.PaperNearEnd)
		set(0x60, st.PaperOut)
	}
	return b
}

// transmitStatus is the answer to GS r n for st, or false for an n a
// printer ignores: 1/49 paper sensor (bits 0-1 near end, 2-3 paper out),
// 2/50 drawer (0: closed).
func transmitStatus(n byte, st PrinterStatus) (byte, bool) {
	switch n {
	case 1, 49:
		var b byte
		if st.PaperNearEnd {
			b |= 0x03
		}
		if st.PaperOut {
			b |= 0x0C
		}
		return b, true
	case 2, 50:
		return 0x00, true
	}
	return 0, false
}

// printerID is the answer to GS I n, or nil for an n a printer ignores.
// n = 1..3 (or 49..51) is one byte: model ID, type ID (bit 1: autocutter
// fitted) and ROM version; 65..69 is text framed as 5F … 00, as an Epson
// TM answers (the emulator's Epson model), so POS software that looks for
// a TM finds one. For 69 it names font, the Kanji font of the lane's
// printer.
func printerID(n byte, font decode.DoubleByte) []byte {
	switch n {
	case 1, 49:
		return []byte{0x20} // TM-T88 class
	case 2, 50:
		return []byte{0x02}
	case 3, 51:
		return []byte{0x41}
	}
	s := map[byte]string{
		65: "1.01 ESC/POS",
		66: "EPSON",
		67: "TM-T88VI",
		68: "PRINTGATE",
		69: font.FontName(), // the lane's Kanji font, for POS drivers that choose their encoding by it
	}[n]
	if s == "" {
		return nil
	}
	return append(append([]byte{0x5F}, s...), 0x00)
}

// barrierAnswer is the answer to GS ( H fn48 with process id id: 37 22 id 00.
func barrierAnswer(id [4]byte) []byte {
	return []byte{0x37, 0x22, id[0], id[1], id[2], id[3], 0x00}
}
