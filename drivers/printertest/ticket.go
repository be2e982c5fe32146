package printertest

import (
	"io"

	"printgate/drivers/escpos/decode"
)

// Ticket is one piece of paper the emulator printed: everything between two
// cuts, decoded into what a person would see on it. It is the decoder's
// Sheet, so the emulator and `printgate decode` draw paper one way.
type Ticket = decode.Sheet

// Image is the size of a printed image in dots.
type Image = decode.ImageSize

// DrawerKick is one pulse on a cash drawer connector.
type DrawerKick = decode.DrawerKick

// Render draws the ticket as it looks on paper (see decode.Sheet.Draw).
// name labels the box (the printer's name).
func Render(w io.Writer, name string, t Ticket) error { return t.Draw(w, name) }
