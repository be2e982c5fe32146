package link

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"printgate/spool"
	"printgate/sync/wire"
)

// pump sends events batches until MaxInFlight wait for events_ack or the
// outbox has nothing more to send. The outbox keeps every event until its
// batch is acknowledged, so the events not yet sent are those at its start
// that are not in flight: reading len(sent)+BatchSize events from the
// start finds the next batch, in task_no then n order, including events
// written behind ones already sent.
func (s *session) pump() error {
	l := s.l
	for len(s.inflight) < l.opts.MaxInFlight {
		var evs []spool.OutboxEvent
		var err error
		if sk, ok := l.opts.Outbox.(skippingOutbox); ok {
			// Decode only what the next batch takes, not again the
			// batches in flight.
			evs, err = sk.ReadOutboxSkipping(l.opts.BatchSize, func(k []byte) bool { _, sent := s.sent[string(k)]; return sent })
		} else {
			evs, err = l.opts.Outbox.ReadOutbox(len(s.sent) + l.opts.BatchSize)
		}
		if err != nil {
			// A read that fails now may work at the next poll; the
			// connection is not at fault.
			l.log.Error("cloud link: cannot read the outbox", "err", err)
			return nil
		}
		next := evs[:0]
		for _, ev := range evs {
			if _, ok := s.sent[string(ev.Key)]; !ok && len(next) < l.opts.BatchSize {
				next = append(next, ev)
			}
		}
		if len(next) == 0 {
			if len(s.inflight) == 0 && len(s.unacked) == 0 {
				now := l.clock.Now()
				l.update(func(st *Stats) { st.LastSync = now })
			}
			return nil
		}
		if err := s.sendBatch(next); err != nil {
			return err
		}
	}
	return nil
}

// sendBatch sends evs (or as many of them as fit in a frame) as one batch.
func (s *session) sendBatch(evs []spool.OutboxEvent) error {
	l := s.l
	evs = ordered(evs, l)
	id := l.batchPrefix + strconv.FormatUint(l.batches.Add(1), 10)
	for n := len(evs); ; {
		b := &wire.Events{Batch: id, Events: make([]wire.Event, n)}
		for i := range n {
			b.Events[i] = wireEvent(evs[i].Event)
		}
		frame, err := wire.Encode(b)
		var fe *wire.FrameError
		switch {
		case err == nil:
			// Timed before the write: a test clock moved once the cloud
			// has the frame finds the batch already due then.
			now := l.clock.Now()
			if err := s.write(wire.TypeEvents, frame); err != nil {
				return err
			}
			keys := make([][]byte, n)
			for i := range n {
				keys[i] = evs[i].Key
				s.sent[string(evs[i].Key)] = struct{}{}
			}
			s.inflight = append(s.inflight, batch{id: id, keys: keys, sentAt: now, due: now.Add(l.opts.AckTimeout)})
			inflight := len(s.inflight)
			l.update(func(st *Stats) { st.InFlight = inflight })
			return nil
		case errors.As(err, &fe) && fe.Code == wire.CodeTooLarge && n > 1:
			n /= 2
		case errors.As(err, &fe) && fe.Code == wire.CodeInvalid:
			return s.dropInvalid(evs[:n])
		default:
			return fmt.Errorf("events batch %s: %w", id, err)
		}
	}
}

// ordered returns evs in the order of §5. The outbox's key order is that
// order; if it ever is not (a record whose task_no or n disagrees with its
// key), the batch is sorted and events repeating a (task_no, n) are left
// for a later batch, so the cloud still gets a well-formed one.
func ordered(evs []spool.OutboxEvent, l *Link) []spool.OutboxEvent {
	check := func() error {
		b := wire.Events{Events: make([]wire.Event, len(evs))}
		for i := range evs {
			b.Events[i] = wireEvent(evs[i].Event)
		}
		return b.Ordered()
	}
	err := check()
	if err == nil {
		return evs
	}
	l.log.Error("cloud link: outbox events out of order; sorting the batch", "err", err)
	evs = slices.Clone(evs)
	slices.SortStableFunc(evs, func(a, b spool.OutboxEvent) int {
		return cmp.Or(cmp.Compare(a.TaskNo, b.TaskNo), cmp.Compare(a.N, b.N))
	})
	return slices.CompactFunc(evs, func(a, b spool.OutboxEvent) bool {
		return a.TaskNo == b.TaskNo && a.N == b.N
	})
}

// dropInvalid removes from the outbox the events Encode refuses on their
// own: they can never be sent, and keeping them would hold back every
// batch behind them. Each is logged.
func (s *session) dropInvalid(evs []spool.OutboxEvent) error {
	var bad [][]byte
	for _, ev := range evs {
		_, err := wire.Encode(&wire.Events{Batch: "check", Events: []wire.Event{wireEvent(ev.Event)}})
		if err != nil {
			s.l.log.Error("cloud link: outbox event cannot be sent and is dropped", "task_no", ev.TaskNo, "n", ev.N, "err", err)
			bad = append(bad, ev.Key)
		}
	}
	if len(bad) == 0 {
		return errors.New("events batch refused by the encoder, but no event alone is")
	}
	if err := s.l.opts.Outbox.AckOutbox(bad); err != nil {
		return fmt.Errorf("drop unsendable outbox events: %w", err)
	}
	return nil
}

// acked deletes an acknowledged batch's events from the outbox. A delete
// that fails is retried at each poll; its keys are not sent again on this
// connection meanwhile (the cloud has them). An id not in flight deletes
// nothing: a second ack of a resent batch, or an ack meant for another
// connection or process (ids never repeat, see Link.batchPrefix).
//
// LastSync moves only when the oldest batch in flight is acknowledged, to
// the time the next oldest was sent (now, when none is left): every batch
// sent before LastSync has its ack, so a lost ack holds it back instead of
// later acks hiding the loss.
func (s *session) acked(id string) {
	i := slices.IndexFunc(s.inflight, func(b batch) bool { return b.id == id })
	if i < 0 {
		s.l.peerWarns.Warn(s.l.log, "cloud link: events_ack for a batch not in flight", "batch", id)
		return
	}
	b := s.inflight[i]
	s.inflight = slices.Delete(s.inflight, i, i+1)
	if err := s.l.opts.Outbox.AckOutbox(b.keys); err != nil {
		s.l.log.Error("cloud link: cannot delete acknowledged events from the outbox; retrying", "batch", id, "err", err)
		s.unacked = append(s.unacked, b.keys...)
	} else {
		for _, k := range b.keys {
			delete(s.sent, string(k))
		}
	}
	inflight := len(s.inflight)
	if i > 0 {
		s.l.update(func(st *Stats) { st.InFlight = inflight })
		return
	}
	synced := s.l.clock.Now()
	if inflight > 0 {
		synced = s.inflight[0].sentAt
	}
	s.l.update(func(st *Stats) {
		st.InFlight = inflight
		if synced.After(st.LastSync) {
			st.LastSync = synced
		}
	})
}

// resendDue sends again, under the same id, every batch whose events_ack
// is overdue (AckTimeout after it was last sent), read again from the
// outbox by its keys. The cloud dedupes the events; whichever copy's ack
// arrives first deletes the batch. A batch whose events all left the
// outbox meanwhile (trimmed by its bounds) is dropped from the window.
func (s *session) resendDue() error {
	now := s.l.clock.Now()
	kept := s.inflight[:0]
	for _, b := range s.inflight {
		if b.due.After(now) {
			kept = append(kept, b)
			continue
		}
		evs, err := s.reread(b.keys)
		if err != nil {
			// The outbox may read again at the next timeout.
			s.l.log.Error("cloud link: cannot read an unacknowledged batch again", "batch", b.id, "err", err)
			b.due = now.Add(s.l.opts.AckTimeout)
			kept = append(kept, b)
			continue
		}
		if len(evs) == 0 {
			s.l.peerWarns.Warn(s.l.log, "cloud link: no events_ack in time, and the batch's events left the outbox; not resent", "batch", b.id)
			for _, k := range b.keys {
				delete(s.sent, string(k))
			}
			continue
		}
		// A cloud that never acknowledges provokes it for every batch.
		s.l.peerWarns.Warn(s.l.log, "cloud link: no events_ack in time; sending the batch again", "batch", b.id,
			"events", len(evs), "waited", now.Sub(b.sentAt).Round(time.Millisecond))
		frame, err := encodeBatch(b.id, evs)
		if err != nil {
			return fmt.Errorf("events batch %s again: %w", b.id, err)
		}
		if err := s.write(wire.TypeEvents, frame); err != nil {
			return err
		}
		b.due = now.Add(s.l.opts.AckTimeout)
		kept = append(kept, b)
		s.l.update(func(st *Stats) { st.Resent++ })
	}
	s.inflight = kept
	inflight := len(kept)
	s.l.update(func(st *Stats) { st.InFlight = inflight })
	return nil
}

// reread returns the outbox events with these keys that are still there.
func (s *session) reread(keys [][]byte) ([]spool.OutboxEvent, error) {
	want := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		want[string(k)] = struct{}{}
	}
	other := func(k []byte) bool { _, ok := want[string(k)]; return !ok }
	if sk, ok := s.l.opts.Outbox.(skippingOutbox); ok {
		return sk.ReadOutboxSkipping(len(keys), other)
	}
	depth, err := s.l.opts.Outbox.OutboxDepth()
	if err != nil {
		return nil, err
	}
	all, err := s.l.opts.Outbox.ReadOutbox(depth + len(keys))
	if err != nil {
		return nil, err
	}
	var out []spool.OutboxEvent
	for _, ev := range all {
		if !other(ev.Key) {
			out = append(out, ev)
		}
	}
	return out, nil
}

// encodeBatch encodes evs, in outbox order, as the events frame id.
func encodeBatch(id string, evs []spool.OutboxEvent) ([]byte, error) {
	b := &wire.Events{Batch: id, Events: make([]wire.Event, len(evs))}
	for i := range evs {
		b.Events[i] = wireEvent(evs[i].Event)
	}
	return wire.Encode(b)
}

// armAck sets the ack timer for the earliest due batch in flight, and
// stops it when none is.
func (s *session) armAck() {
	if s.ack == nil {
		return
	}
	if len(s.inflight) == 0 {
		s.ack.Stop()
		return
	}
	due := s.inflight[0].due
	for _, b := range s.inflight[1:] {
		if b.due.Before(due) {
			due = b.due
		}
	}
	s.ack.Reset(due.Sub(s.l.clock.Now()))
}

// retryAcks retries deleting acknowledged events whose delete failed.
func (s *session) retryAcks() {
	if len(s.unacked) == 0 {
		return
	}
	if err := s.l.opts.Outbox.AckOutbox(s.unacked); err != nil {
		s.l.log.Warn("cloud link: still cannot delete acknowledged events from the outbox", "err", err)
		return
	}
	for _, k := range s.unacked {
		delete(s.sent, string(k))
	}
	s.unacked = nil
}

// skippingOutbox is an Outbox that can skip keys without decoding them;
// *spool.Spool is one.
type skippingOutbox interface {
	ReadOutboxSkipping(n int, skip func(key []byte) bool) ([]spool.OutboxEvent, error)
}

var _ skippingOutbox = (*spool.Spool)(nil)
