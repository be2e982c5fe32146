package agent

import (
	"fmt"

	"printgate/agent/api"
	"printgate/drivers/escpos"
	"printgate/drivers/escpos/decode"
	"printgate/spool"
)

// checkPayload refuses a raw payload that ends inside a command (DESIGN.md
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
	part, ok := decode.Unfinished(nt.Payload, p.DecodeOptions())
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: the payload ends inside a command: %s, %d of its bytes present; a printer would take the next job's first bytes as the rest of it. Send the command whole, or leave it out",
		api.ErrBadPayload, part, part.Len)
}
