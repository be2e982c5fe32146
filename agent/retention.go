package agent

import (
	"context"
	"errors"
	"time"

	"printgate/spool"
)

// Maintain applies retention to sp every PruneEvery and compacts it when
// pruning freed a lot, so the file does not grow without bound, until ctx
// ends. The daemon runs it once the agent serves.
func (a *Agent) Maintain(ctx context.Context, sp *spool.Spool) {
	every := PruneEvery(a.cfg.Spool.Retention)
	for {
		t := a.opts.Clock.NewTimer(every)
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

// PruneEvery is how often retention runs: hourly for the usual days-long
// retention, but a quarter of a short one (at least a minute), so a spool
// kept for ten minutes is pruned within minutes, not after an hour of
// growth. Tools that judge the spool's size over time (cmd/soak) use it.
func PruneEvery(retention time.Duration) time.Duration {
	return min(time.Hour, max(time.Minute, retention/4))
}
