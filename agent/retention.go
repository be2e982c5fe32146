package agent

import (
	"context"
	"errors"
	"time"

	"printgate/spool"
)

// maintain applies retention every hour and compacts the spool when pruning
// freed a lot, so the file does not grow without bound.
func (a *Agent) maintain(ctx context.Context, sp *spool.Spool) {
	for {
		t := a.opts.Clock.NewTimer(time.Hour)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		// Loss is reported by the gauges loop within seconds.
		if _, err := sp.TrimOutbox(a.opts.Clock.Now()); err != nil {
			a.log.Error("outbox trim failed", "err", err)
		}
		st, err := sp.Prune(a.opts.Clock.Now())
		if err != nil {
			a.log.Error("spool retention failed", "err", err)
			continue
		}
		if st.Pruned+st.Expired >= 1000 {
			cs, err := sp.Compact()
			if err != nil && !errors.Is(err, spool.ErrClosed) {
				a.log.Error("spool compaction failed", "err", err)
				continue
			}
			a.log.Info("spool compacted", "pruned", st.Pruned, "expired", st.Expired, "before", cs.Before, "after", cs.After)
		}
	}
}
