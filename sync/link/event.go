package link

import (
	"printgate/spool"
	"printgate/sync/wire"
)

// wireEvent is the one place an outbox event becomes the event §5 sends:
// every field the cloud sees is named here, so a field added to the spool's
// record stays local until the protocol takes it.
func wireEvent(ev spool.Event) wire.Event {
	w := wire.Event{
		TaskNo:            ev.TaskNo,
		N:                 ev.N,
		State:             ev.State,
		Reason:            ev.Reason,
		Printer:           ev.Printer,
		Target:            ev.Target,
		Confirmation:      ev.Confirmation,
		Attempts:          ev.Attempts,
		PossibleDuplicate: ev.PossibleDuplicate,
		Origin:            ev.Origin,
		At:                ev.At,
		Seq:               ev.Seq,
	}
	if j := ev.Job; j != nil {
		w.Job = &wire.JobInfo{Printer: j.Printer, Priority: j.Priority, Origin: j.Origin, Size: j.Size, SHA256: j.SHA256}
	}
	return w
}
