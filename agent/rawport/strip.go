package rawport

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"printgate/drivers/escpos/decode"
)

// The strip table: commands a raw job may not pass to the printer, because
// the printer is shared (the agent prints every other ticket on it and owns
// its one session with it). A job from the raw port is anybody on the
// network who can reach the port, so it may put anything on paper, but it
// may not
//   - change what the printer keeps over a power cycle (memory switches,
//     NV memory, NV graphics, maintenance counters),
//   - disable the printer or power it off, or clear its buffers (which holds
//     the agent's next job),
//   - make the printer transmit: an answer, or unsolicited status, arrives
//     in the agent's own session, where it is taken for the answer to the
//     agent's own query.
//
// Each entry is framed by the one command-length table the decoder and the
// driver's resynchronisation use (decode.CommandLength), as an Epson
// frames it, so the bytes after it are read as the printer reads them. A
// command the table does not know is removed too (its two bytes): no
// length for it can be trusted (the allow-list, docs/DESIGN.md, invariant 13). A
// stripped command is not in Job.Data and is not content. docs/PROTOCOL.md
// (Raw port) lists the same table for people. The queries the port
// answers itself (DLE EOT, DLE ENQ, GS r, GS I, GS a, GS ( H fn48) are
// handled in command, with the decoder's framing.
//
// Kept on purpose: text, styles, code pages, images in RAM (GS v 0, ESC *,
// GS ( L / GS 8 L store and print, download graphics), barcodes, 2D
// symbols, cuts, ESC p and DLE DC4 1 (drawer), beeps, printing NV images
// already stored (FS p, GS ( L fn 69), ESC = n with bit 0 set (printer
// enabled), and RAM settings ESC @ resets (ESC c 3/4/5 paper sensors and
// panel buttons, GS ( K print density and speed, GS ( N character effects,
// GS ( D real-time command enable): every ticket the agent renders starts
// with ESC @.

// stripRule is one entry of the strip table.
type stripRule struct {
	// name is the command as PROTOCOL.md lists it.
	name string
	// keep, if set, reports that the whole command cmd is one the rule
	// lets through after all (a function of the same prefix that is
	// harmless).
	keep func(cmd []byte) bool
	// answer, if set, is what the port answers in the printer's place.
	answer func(c *conn) []byte
}

// parenBody is the body d1..dk of ESC/GS/FS ( x pL pH d1..dk.
func parenBody(cmd []byte) []byte { return cmd[5:] }

// nvGraphicsFn reports whether fn, a GS ( L / GS 8 L function, stores or
// deletes NV graphics or asks the printer to transmit: 0/48 NV capacity,
// 3/51 and 4/52 remaining capacity, 64 and 80 key code lists (transmit);
// 65, 66 delete and 67, 68 define NV graphics (NV memory, which wears).
// The rest (print, store in the print buffer, download graphics in RAM,
// print a stored NV graphic) is kept.
func nvGraphicsFn(fn byte) bool {
	switch fn {
	case 0, 48, 3, 51, 4, 52, 64, 65, 66, 67, 68, 80:
		return true
	}
	return false
}

// stripTable is matched by prefix: a command's first two bytes, or three
// where the third picks the function (DLE DC4 fn, GS g, FS g, the GS ( and
// FS ( families). Every command is framed by the one command-length table
// (decode.CommandLength), which frames it as an Epson does.
var stripTable = []struct {
	prefix string
	rule   stripRule
}{
	{"\x1b=", stripRule{name: "ESC = n (n even: printer disabled)", keep: func(cmd []byte) bool {
		// Bit 0 set enables the printer: harmless, kept. Bit 0 clear
		// disables it: it would ignore everything after, the agent's next
		// tickets included, while still answering status.
		return cmd[2]&1 == 1
	}}},
	{"\x1bv", stripRule{name: "ESC v (transmit paper sensor status)",
		answer: func(c *conn) []byte {
			a, _ := transmitStatus(1, c.p.printerStatus())
			return []byte{a}
		}}},
	{"\x1bu", stripRule{name: "ESC u n (transmit peripheral device status)"}},
	{"\x10\x14\x02", stripRule{name: "DLE DC4 2 (power off)"}},
	{"\x10\x14\x07", stripRule{name: "DLE DC4 7 (transmit specified status in real time)"}},
	{"\x10\x14\x08", stripRule{name: "DLE DC4 8 (clear buffers)"}},
	{"\x1dg0", stripRule{name: "GS g 0 (initialize maintenance counter)"}},
	{"\x1dg2", stripRule{name: "GS g 2 (transmit maintenance counter)"}},
	{"\x1dj", stripRule{name: "GS j n (automatic status back for ink)"}},
	{"\x1d(A", stripRule{name: "GS ( A (test print, then printer reset)"}},
	{"\x1d(C", stripRule{name: "GS ( C (edit NV user memory)"}},
	{"\x1d(E", stripRule{name: "GS ( E (user setting mode: memory switches, customized values)"}},
	{"\x1d(M", stripRule{name: "GS ( M (save or load customized settings)"}},
	{"\x1d(H", stripRule{name: "GS ( H other than fn 48 (e.g. offline response)", keep: func(cmd []byte) bool {
		// fn 48 (process id) is the port's barrier: answered in command.
		body := parenBody(cmd)
		return len(body) == 6 && body[0] == 0x30 && body[1] == 0x30
	}}},
	{"\x1d(L", stripRule{name: "GS ( L / GS 8 L NV graphics and capacity queries", keep: func(cmd []byte) bool {
		body := parenBody(cmd)
		return !(len(body) >= 2 && nvGraphicsFn(body[1]))
	}}},
	{"\x1d8L", stripRule{name: "GS ( L / GS 8 L NV graphics and capacity queries", keep: func(cmd []byte) bool {
		body := cmd[7:]
		return !(len(body) >= 2 && nvGraphicsFn(body[1]))
	}}},
	{"\x1c(E", stripRule{name: "FS ( E (NV logo and user memory settings)"}},
	{"\x1c(L", stripRule{name: "FS ( L fn 33/34 (NV paper layout: set or transmit)", keep: func(cmd []byte) bool {
		body := parenBody(cmd)
		return !(len(body) >= 1 && (body[0] == 33 || body[0] == 34))
	}}},
	{"\x1d(k", stripRule{name: "GS ( k fn 82 (transmit symbol size)", keep: func(cmd []byte) bool {
		body := parenBody(cmd)
		return !(len(body) >= 2 && body[1] == 82)
	}}},
	{"\x1d^", stripRule{name: "GS ^ r t 1 (macro waiting for the FEED button)", keep: func(cmd []byte) bool {
		// m = 1 waits for the FEED button between runs: the printer holds
		// every later ticket until someone presses it.
		return cmd[4] != 1
	}}},
	{"\x1c(e", stripRule{name: "FS ( e (automatic status back for optional functions)"}},
	{"\x1cg1", stripRule{name: "FS g 1 (write NV user memory)"}},
	{"\x1cg2", stripRule{name: "FS g 2 (transmit NV user memory)"}},
	{"\x1cq", stripRule{name: "FS q (define NV bit images)"}},
}

// stripped matches b, the buffer at a command's first byte, against the
// strip table. It returns the rule and the command's length when b starts
// with a whole stripped command; the rule and 0 when b starts with part of
// a command the rule frames (wait for more bytes); nil when b does not
// start with a stripped command (the decoder frames it).
func stripped(b []byte) (*stripRule, int) {
	if len(b) < 2 || (b[0] != 0x1B && b[0] != 0x1D && b[0] != 0x1C && b[0] != 0x10) {
		return nil, 0
	}
	for i := range stripTable {
		e := &stripTable[i]
		p := e.prefix
		if len(b) < len(p) {
			// A three-byte prefix whose third byte is still to come: the
			// command is undecided. Waiting changes nothing the decoder
			// would do: every command starting with these two bytes is at
			// least three long, so it would wait too.
			if string(b) == p[:len(b)] {
				return &e.rule, 0
			}
			continue
		}
		if string(b[:len(p)]) != p {
			continue
		}
		n := decode.CommandLength(b)
		if n > len(b) {
			return &e.rule, 0 // the rest is still to come
		}
		if e.rule.keep != nil && e.rule.keep(b[:n]) {
			return nil, 0
		}
		return &e.rule, n
	}
	if !decode.Known(b) {
		// Not on the allow-list: the decoder has no reference length for
		// it, and firmware that frames it longer would eat what follows.
		// Its two bytes go; what follows is read as the printer would
		// read data.
		return &stripRule{name: decode.Partial{Head: b[:2]}.Name() + " (a command the agent cannot frame)"}, 2
	}
	return nil, 0
}

// Refused names the command at the start of b when a payload may not carry
// it to a printer: one the raw port strips, or one the decoder cannot
// frame; n is its length (2 for one that cannot be framed). It returns
// "" when b starts with an allowed command, or with part of a command
// whose length is still unknown. The local API and the cloud refuse such
// payloads at intake. ESC = n is allowed there: every payload the agent
// prints ends with ESC = 1.
func Refused(b []byte) (name string, n int) {
	r, n := stripped(b)
	if r == nil || n == 0 || strings.HasPrefix(r.name, "ESC = ") {
		return "", 0
	}
	return r.name, n
}

// strip takes a stripped command out of the job being read: the port
// answers in the printer's place where the rule says so, and counts it for
// the job's log line.
func (c *conn) strip(r *stripRule) {
	if r.answer != nil {
		c.answer(r.answer(c))
	}
	if c.strips == nil {
		c.strips = map[string]int{}
	}
	c.strips[r.name]++
}

// logStrips says, once per job, which commands the port took out of it.
func (c *conn) logStrips() {
	if len(c.strips) == 0 {
		return
	}
	names := make([]string, 0, len(c.strips))
	for name, n := range c.strips {
		names = append(names, fmt.Sprintf("%s ×%d", name, n))
	}
	slices.Sort(names)
	c.p.lines.log(c.log, slog.LevelInfo, "rawport: commands that would reconfigure, disable or query the shared printer were removed from a raw job; the rest prints (see PROTOCOL.md, Raw port)",
		"removed", strings.Join(names, "; "))
	c.strips = nil
}
