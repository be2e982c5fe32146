package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config reloads during the load: now and then the runner
// rewrites the agent's config with other raw settings for keptOpenPrinter
// and asks the agent to reload it. A change of raw settings makes the agent
// close that raw port (its drain must take the job the kept-open client just
// sent) and open it again.
const (
	reloadGapMin = 4 * time.Second
	reloadGapMax = 10 * time.Second
	// reloadTicketWait bounds how long a reload waits for the kept-open
	// client to reach the point of its ticket the reload was timed for
	// (the client may be reconnecting, or the agent restarting).
	reloadTicketWait = 3 * time.Second
)

// reloadSettings are the raw settings the reloads go through, in turn: a
// change of either reopens the port (agent.sameRawPort).
var reloadSettings = []struct{ idleGap, status string }{
	{"1s", "spooled"},
	{"2s", "printer"},
	{"1500ms", "printer"},
	{"2s", "spooled"},
}

// reloads is what the runner did and saw of its reloads.
type reloads struct {
	mu sync.Mutex
	// At are the applied reloads, from when each was asked for to its
	// answer (the port's drain is over by then).
	At []timeSpan
	// Failed counts reloads that got no answer or were refused (the agent
	// killed at that moment, say): the next restart reads the file anyway.
	Failed int
	// conns counts the kept-open client's connections.
	conns int
	// ticket is how a reload asks the kept-open client for a ticket: the
	// client calls the func it receives at the point of the ticket where
	// the reload is to happen.
	ticket chan func()
}

// writeConfig writes the agent's config with reloadSettings[k] for
// keptOpenPrinter's raw port, in one rename so that a restart after a kill
// never reads half a file.
func (r *runner) writeConfig(k int) error {
	s := reloadSettings[k%len(reloadSettings)]
	line := fmt.Sprintf("raw_listen = %q\n", r.rawAddrs[keptOpenPrinter])
	if !strings.Contains(r.cfgText, line) {
		return fmt.Errorf("chaos: the config has no raw port for p%d", keptOpenPrinter)
	}
	text := strings.Replace(r.cfgText, line, line+fmt.Sprintf("raw_idle_gap = %q\nraw_status = %q\n", s.idleGap, s.status), 1)
	tmp := r.cfgPath + ".new"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return fmt.Errorf("chaos: write the config: %w", err)
	}
	if err := os.Rename(tmp, r.cfgPath); err != nil {
		return fmt.Errorf("chaos: write the config: %w", err)
	}
	return nil
}

// reloadLoop reloads the agent every reloadGapMin–reloadGapMax until ctx
// ends, each time in the middle or at the end of a kept-open ticket, so
// that the port closes with that job open.
func (r *runner) reloadLoop(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.plan.Seed, 4000))
	for k := 0; ; k++ {
		if !sleepUntil(ctx, time.Now().Add(uniform(rng, reloadGapMin, reloadGapMax))) {
			return
		}
		r.awaitKeptOpenTicket(ctx)
		if ctx.Err() != nil {
			return
		}
		if err := r.writeConfig(k); err != nil {
			r.logf("reload %d: %v", k+1, err)
			continue
		}
		at := time.Now()
		res, err := r.api.Reload(ctx)
		r.reloads.mu.Lock()
		if err != nil || !res.Applied {
			r.reloads.Failed++
		} else {
			r.reloads.At = append(r.reloads.At, timeSpan{From: at, To: time.Now()})
		}
		n := len(r.reloads.At)
		r.reloads.mu.Unlock()
		switch {
		case err != nil:
			r.logf("reload: %v", err)
		case !res.Applied:
			r.logf("reload: not applied: %+v", res)
		default:
			r.logf("reload %d: p%d raw %+v in %s (changed %v)", n, keptOpenPrinter, reloadSettings[k%len(reloadSettings)], time.Since(at).Round(time.Millisecond), slices.Sorted(slices.Values(res.Changed)))
		}
	}
}

// awaitKeptOpenTicket asks the kept-open client for a ticket and waits
// until it reaches the point of it the reload is timed for, at most
// reloadTicketWait.
func (r *runner) awaitKeptOpenTicket(ctx context.Context) {
	now := make(chan struct{})
	var once sync.Once
	signal := func() { once.Do(func() { close(now) }) }
	t := time.NewTimer(reloadTicketWait)
	defer t.Stop()
	select {
	case r.reloads.ticket <- signal:
	case <-t.C:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-now:
	case <-t.C:
	case <-ctx.Done():
	}
}

// reloadTimes copies the applied reloads and counts the failed ones, for
// observe.
func (r *runner) reloadTimes() ([]timeSpan, int) {
	r.reloads.mu.Lock()
	defer r.reloads.mu.Unlock()
	return append([]timeSpan(nil), r.reloads.At...), r.reloads.Failed
}
