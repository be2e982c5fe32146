package agent

import (
	"context"
	"errors"
	"time"

	"printgate/spool"
)

// Maintain applies retention to sp every PruneEvery and compacts it when
// pruning freed a lot, so the file does not grow without bound, until ctx
// ends. Every CompactCheckEvery it also compacts a spool whose file nears
// its cap while much of it is free: bbolt reuses free pages only in runs
// long enough, so a spool kept under its cap by dropping printed bodies
// early (spool reclaim) still creeps up to the cap until it is rewritten.
// The daemon runs it once the agent serves.
func (a *Agent) Maintain(ctx context.Context, sp *spool.Spool) {
	every := PruneEvery(a.cfg.Spool.Retention)
	prune := a.opts.Clock.NewTimer(every)
	defer func() { prune.Stop() }()
	for {
		check := a.opts.Clock.NewTimer(CompactCheckEvery)
		select {
		case <-ctx.Done():
			check.Stop()
			return
		case <-check.C():
			if sp.Fragmented() {
				a.compact(sp, "the file nears the size at which intake stops while much of it is free")
			}
			continue
		case <-sp.CompactWanted():
			check.Stop()
			if sp.Fragmented() {
				a.compact(sp, "intake was refused on the file while much of it is free")
			}
			continue
		case <-prune.C():
			check.Stop()
			prune = a.opts.Clock.NewTimer(every)
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
			a.compact(sp, "retention freed much", "pruned", st.Pruned, "expired", st.Expired)
		}
	}
}

// CompactCheckEvery is how often Maintain looks whether the spool needs
// rewriting before it reaches its cap (spool.Fragmented): a cheap look at
// the file's statistics.
const CompactCheckEvery = 10 * time.Second

// compact rewrites sp and logs why and what it gained. After a failure
// (or a copy that would not fit on the disk, which is not even started) it
// waits CompactBackoffMin, doubling to CompactBackoffMax, before it tries
// again, and /healthz and the page say why meanwhile: every try holds the
// spool while it copies, and a copy that cannot fit drives the disk the
// POS needs to zero.
func (a *Agent) compact(sp *spool.Spool, why string, args ...any) {
	now := a.opts.Clock.Now()
	a.compactMu.Lock()
	wait := now.Before(a.compactRetryAt)
	a.compactMu.Unlock()
	if wait {
		return
	}
	cs, err := sp.Compact()
	if errors.Is(err, spool.ErrClosed) {
		return
	}
	a.compactMu.Lock()
	shown := a.compactErr != ""
	if err != nil {
		a.compactBackoff = min(max(2*a.compactBackoff, CompactBackoffMin), CompactBackoffMax)
		a.compactRetryAt = now.Add(a.compactBackoff)
		a.compactErr = firstLine(err.Error())
	} else {
		a.compactBackoff, a.compactRetryAt, a.compactErr = 0, time.Time{}, ""
	}
	backoff := a.compactBackoff
	a.compactMu.Unlock()
	if err != nil {
		a.log.Error("spool compaction failed", "why", why, "err", err, "retry_in", backoff,
			"fix", "free disk space on this PC: the copy needs room for the live data and keep_free")
		a.observe(Event{Health: true})
		return
	}
	a.log.Info("spool compacted", append([]any{"why", why, "before", cs.Before, "after", cs.After}, args...)...)
	if shown {
		a.observe(Event{Health: true})
	}
}

// CompactBackoffMin and CompactBackoffMax bound the wait after a failed
// compaction before the next try.
const (
	CompactBackoffMin = time.Minute
	CompactBackoffMax = time.Hour
)

// compactProblem is why the last compaction failed, "" once one succeeded.
func (a *Agent) compactProblem() string {
	a.compactMu.Lock()
	defer a.compactMu.Unlock()
	return a.compactErr
}

// PruneEvery is how often retention runs: hourly for the usual days-long
// retention, but a quarter of a short one (at least a minute), so a spool
// kept for ten minutes is pruned within minutes, not after an hour of
// growth. Tools that judge the spool's size over time (cmd/soak) use it.
func PruneEvery(retention time.Duration) time.Duration {
	return min(time.Hour, max(time.Minute, retention/4))
}

// noteReclaimed tells the log, at most once a minute, of finished tickets
// whose body the spool dropped before their retention ended to make room
// for new work (spool reclaim): a manager who cannot reprint yesterday's
// ticket finds out why.
func (a *Agent) noteReclaimed() {
	n := a.spool.Reclaimed()
	now := a.opts.Clock.Now()
	a.reclaimMu.Lock()
	defer a.reclaimMu.Unlock()
	if n == a.reclaimSeen || (!a.reclaimLogged.IsZero() && now.Sub(a.reclaimLogged) < time.Minute) {
		return
	}
	a.log.Info("spool full of printed tickets: the oldest lost their body early to make room for new ones; they can no longer be reprinted, and their task_no still counts as a duplicate",
		"dropped", n-a.reclaimSeen, "fix", "raise [spool] max_size, or the door's quota_*, to keep printed tickets for the whole retention")
	a.reclaimSeen, a.reclaimLogged = n, now
}
