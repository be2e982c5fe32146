package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"printgate/agent/api"
	"printgate/spool"
)

// Health reports the agent's overall state for /healthz.
func (a *Agent) Health() api.Health {
	h := api.Health{Status: "ok", Link: a.linkState()}
	if err := a.Failed(); err != nil {
		h.Status, h.Error = "failed", firstLine(err.Error())
		return h
	}
	if st, err := a.spool.OutboxStats(); err == nil {
		h.Outbox, h.OutboxDropped = st.Depth, st.Dropped
	} else {
		h.Status, h.Error = "degraded", "the spool cannot be read: "+err.Error()
	}
	// A door that refuses or a raw port that waits says more than "nearly
	// full" does, so it is named first.
	if p := a.doors.problem(); p != "" && h.Status == "ok" {
		h.Status, h.Error = "degraded", p
	}
	if p := a.rawProblem(); p != "" && h.Status == "ok" {
		h.Status, h.Error = "degraded", p
	}
	if u, err := a.spool.Usage(); err == nil {
		h.SpoolUsedPercent = u.Percent()
		if h.SpoolUsedPercent >= SpoolNearlyFullPercent && h.Status == "ok" {
			h.Status = "degraded"
			h.Error = fmt.Sprintf("the spool is %d%% full: new tasks are refused at 100%%; raise spool max_size or free the disk", h.SpoolUsedPercent)
		}
	}
	a.spoolStrain(&h)
	var ce *spool.CorruptError
	if errors.As(a.spool.Recovered(), &ce) {
		h.Status = "degraded"
		h.SpoolQuarantined, h.UnreadableRecords = ce.MovedTo, ce.Unreadable
		h.Error = fmt.Sprintf("the spool file was corrupt and was moved to %s; %d tasks were salvaged, %d records could not be read", ce.MovedTo, ce.Salvaged, ce.Unreadable)
		if ce.SalvageErr != nil {
			h.SalvageError = ce.SalvageErr.Error()
			h.Error = fmt.Sprintf("the spool file was corrupt and was moved to %s; salvaging it failed (%v), so its tasks were not printed: restore them from %s with support", ce.MovedTo, ce.SalvageErr, ce.MovedTo)
		}
	}
	return h
}

// SpoolStrainWindow is how long a refusal for room, or a failed write of
// accepted work's progress, keeps /healthz "degraded" and the page's alert
// up after the last one: a spool that refuses work says so, and its
// owners retry failed writes every few seconds, so it stays up while the
// trouble lasts.
const SpoolStrainWindow = time.Minute

// spoolStrain reports in h what the spool could not do lately: a failed
// write of progress first (tickets may wait on it), then refused intake,
// then a failed compaction.
func (a *Agent) spoolStrain(h *api.Health) {
	now := a.opts.Clock.Now()
	st := a.spool.Strain()
	h.SpoolWriteFailing = !st.WriteFailedAt.IsZero() && now.Sub(st.WriteFailedAt) < SpoolStrainWindow
	h.SpoolRefusing = !st.RefusedAt.IsZero() && now.Sub(st.RefusedAt) < SpoolStrainWindow
	h.SpoolCompactError = a.compactProblem()
	if h.Status == "failed" {
		return
	}
	switch {
	case h.SpoolWriteFailing:
		h.Status = "degraded"
		h.Error = fmt.Sprintf("the spool could not record the progress of tickets already taken (%v); it keeps retrying, and they wait meanwhile: free disk space on this PC, or raise [spool] max_size", firstLine(st.WriteErr.Error()))
	case h.SpoolRefusing:
		h.Status = "degraded"
		h.Error = fmt.Sprintf("the spool is full and refuses new tickets (%d refused since start); tickets already taken are safe and will print: raise [spool] max_size or free disk space on this PC", st.Refused)
	case h.SpoolCompactError != "" && h.Status == "ok":
		h.Status = "degraded"
		h.Error = "the spool could not be compacted: " + h.SpoolCompactError + "; free disk space on this PC"
	}
}

// strainState is what spoolStrain reports, to tell when it changes.
func strainState(h api.Health) string {
	return fmt.Sprint(h.SpoolWriteFailing, h.SpoolRefusing, h.SpoolCompactError != "")
}

// SpoolNearlyFullPercent is the spool fill at which /healthz turns
// "degraded" and the manager page raises its alert: early enough to act
// before new tickets are refused.
const SpoolNearlyFullPercent = 80

// reportIntegrity publishes what the spool knows of lost work, at start and
// with the gauges: salvage counts, and outbox events the cap dropped (with
// an ERROR line each time that number grows).
func (a *Agent) reportIntegrity() {
	var ce *spool.CorruptError
	if errors.As(a.spool.Recovered(), &ce) {
		a.m.SetUnreadableRecords(ce.Unreadable)
	}
	if u, err := a.spool.Usage(); err == nil {
		if full := u.Percent() >= SpoolNearlyFullPercent; full != a.spoolFull {
			a.spoolFull = full
			if full {
				a.log.Warn("SPOOL NEARLY FULL: new tasks are refused when it is full", "used_percent", u.Percent(), "file_bytes", u.File, "live_bytes", u.Live, "cap_bytes", u.Cap)
			}
			a.observe(Event{Health: true})
		}
	}
	// The spool's strain shows within seconds, and its end too.
	var h api.Health
	a.spoolStrain(&h)
	if st := strainState(h); st != a.strainShown {
		first := a.strainShown == ""
		a.strainShown = st
		strained := h.SpoolWriteFailing || h.SpoolRefusing
		if strained {
			a.log.Error("SPOOL STRAINED: "+h.Error, "refusing", h.SpoolRefusing, "write_failing", h.SpoolWriteFailing)
		}
		if strained || !first {
			a.observe(Event{Health: true})
		}
	}
	// A door's trip shows at once (Submit); its end shows here.
	if p := a.doors.problem(); p != a.doorsShown {
		a.doorsShown = p
		a.observe(Event{Health: true})
	}
	st, err := a.spool.OutboxStats()
	if err != nil {
		return
	}
	a.m.SetOutboxDepth(st.Depth)
	a.m.SetOutboxLoss(st.Dropped, st.Compacted)
	if st.Dropped > a.outboxDropped {
		a.log.Error("OUTBOX FULL: events the cloud never acknowledged were dropped; the cloud lacks part of those tasks' history",
			"dropped_total", st.Dropped, "new", st.Dropped-a.outboxDropped, "compacted_total", st.Compacted, "depth", st.Depth)
		a.outboxDropped = st.Dropped
		a.observe(Event{Health: true})
	}
}

// gauges refreshes the metrics that are read from the spool rather than
// counted as they happen: tasks by state and the outbox depth.
func (a *Agent) gauges(ctx context.Context) {
	for {
		if counts, err := a.spool.Counts(); err == nil {
			a.m.SetTaskCounts(counts)
		}
		a.reportIntegrity()
		t := a.opts.Clock.NewTimer(5 * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// firstLine is s up to its first newline: a panic's cause without its stack.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
