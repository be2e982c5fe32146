package agent

import (
	"fmt"

	"printgate/agent/api"
	"printgate/agent/rawport"
	"printgate/drivers/escpos"
	"printgate/drivers/escpos/decode"
	"printgate/spool"
)

// checkPayload refuses a raw payload that ends inside a command (docs/DESIGN.md,
// invariant 9): the printer would wait for the command's missing bytes and
// take them from what follows, the agent's completion probe or the next
// ticket, so its outcome would be unknown and the next ticket eaten. It
// frames the bytes as the printer of profile p reads them (the decoder of
// the emulator and the raw port).
//
// A raw port's job is never refused here: the port ends its jobs on a
// command boundary and marks a job cut short truncated (it prints, marked
// INCOMPLETE), so the POS that cannot be told is not left with a lost
// ticket.
func checkPayload(nt spool.NewTask, p escpos.Profile) error {
	if len(nt.Payload) == 0 || nt.Origin == spool.OriginRaw {
		return nil
	}
	if err := checkAllowed(nt.Payload, p); err != nil {
		return err
	}
	part, ok := decode.Unfinished(nt.Payload, p.DecodeOptions())
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: the payload ends inside a command: %s, %d of its bytes present; a printer would take the next job's first bytes as the rest of it. Send the command whole, or leave it out",
		api.ErrBadPayload, part, part.Len)
}

// checkAllowed refuses a payload carrying a command not on the allow-list
// (docs/DESIGN.md, invariant 13): one the decoder cannot frame by its reference
// length, or one the raw port strips because it rewrites, disables or
// queries the shared printer (rawport.Refused). The bytes are framed as the
// printer of profile p reads them; the error names the first such command
// and its offset.
func checkAllowed(payload []byte, p escpos.Profile) error {
	d := decode.NewWith(p.DecodeOptions())
	for off := 0; off < len(payload); {
		b := payload[off:]
		if name, n := rawport.Refused(b); name != "" {
			head := decode.Partial{Offset: off, Head: b[:min(n, 16)], Len: n}
			return fmt.Errorf("%w: the payload carries %s: %s; printgate passes only commands it can frame and that leave the shared printer as it was (PROTOCOL.md, Raw port). Leave it out",
				api.ErrBadPayload, name, head)
		}
		n := d.Step(b)
		if n == 0 {
			return nil // ends inside a command: Unfinished says so
		}
		off += n
		d.Cut() // keep no paper, only modes
	}
	return nil
}
