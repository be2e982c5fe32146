package agent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/spool"
)

// ReasonPrinterRemoved is the reason recorded on a task whose printer a
// reload removed and which no backup could take: it waits, held (or parked
// where the spool's state table does not allow HELD from its state), for a
// manager to retry it elsewhere or for the printer to come back.
const ReasonPrinterRemoved = "PRINTER_REMOVED"

// Reload reads the config file again and applies its printers without a
// restart (SIGHUP, `printgate reload`, the page's action). Reloads run one
// at a time. A file with errors is refused: the running config stays, and
// the error wraps api.ErrConfigRefused with the result's Errors set.
//
// New printers get a lane that restores whatever the spool holds for them
// before it takes intake. A changed printer's lane finishes the job in
// flight (completion barrier included), stops, and a new lane restores its
// queue from the spool, which is the source of truth: nothing is lost and
// nothing prints twice. A removed printer stops taking work (intake
// answers unknown_printer); once its job in flight ends, its waiting tasks
// move to its backup with the FAILOVER banner, or wait with reason
// PRINTER_REMOVED. Settings only a restart applies (listen, tls, data_dir,
// cloud, api_token, ...) are reported in RestartNeeded and left alone.
func (a *Agent) Reload(ctx context.Context) (api.ReloadResult, error) {
	res := api.ReloadResult{Config: a.cfg.Path, Added: []string{}, Changed: []string{}, Removed: []string{}, RestartNeeded: []string{}}
	if err := a.available(); err != nil {
		return res, fmt.Errorf("reload: %w", err)
	}
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	select {
	case <-a.quit:
		return res, fmt.Errorf("reload: %w: the agent is stopping", api.ErrUnavailable)
	default:
	}
	// Read under the lock: a reload that waited applies the file as it is
	// now, not as it was when it was asked for.
	cfg, err := config.Load(a.cfg.Path)
	if err != nil {
		return a.refuse(res, err)
	}
	return a.apply(ctx, cfg, res)
}

// refuse reports a config that cannot be used; nothing changes.
func (a *Agent) refuse(res api.ReloadResult, err error) (api.ReloadResult, error) {
	var errs config.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			res.Errors = append(res.Errors, e.Error())
		}
	} else {
		res.Errors = []string{err.Error()}
	}
	a.log.Error("config reload refused: the running config is kept", "config", a.cfg.Path, "errors", len(res.Errors), "err", err)
	return res, fmt.Errorf("%w:\n%w", api.ErrConfigRefused, err)
}

// samePrinter reports whether two entries configure a lane the same way
// (the line they are written on does not count).
func samePrinter(x, y *config.Printer) bool {
	a, b := *x, *y
	a.Line, b.Line = 0, 0
	a.URLLine, b.URLLine = 0, 0
	return reflect.DeepEqual(a, b)
}

// restartNeeded names the settings of next that differ from the running
// config run and that only a restart applies.
func restartNeeded(run, next *config.Config) []string {
	out := []string{}
	check := func(name string, same bool) {
		if !same {
			out = append(out, name)
		}
	}
	check("data_dir", run.DataDir == next.DataDir)
	check("listen", run.Listen == next.Listen)
	check("allowed_hosts", slices.Equal(run.AllowedHosts, next.AllowedHosts))
	check("tls", reflect.DeepEqual(run.TLS, next.TLS))
	check("api_token", run.APIToken.Reveal() == next.APIToken.Reveal() && run.APITokenFile == next.APITokenFile)
	check("cloud", reflect.DeepEqual(run.Cloud, next.Cloud))
	check("spool", reflect.DeepEqual(run.Spool, next.Spool))
	check("log", reflect.DeepEqual(run.Log, next.Log))
	rd, nd := run.Defaults, next.Defaults
	check("defaults.retry", rd.RetryBase == nd.RetryBase && rd.RetryCap == nd.RetryCap && rd.RetryFactor == nd.RetryFactor && rd.RetryJitter == nd.RetryJitter)
	check("defaults.max_attempts", rd.MaxAttempts == nd.MaxAttempts)
	return out
}

// apply makes cfg's printers the running ones (see Reload). The caller
// holds reloadMu.
func (a *Agent) apply(ctx context.Context, cfg *config.Config, res api.ReloadResult) (api.ReloadResult, error) {
	names, lanes := a.laneList()
	old := map[string]*lane{}
	for i, n := range names {
		old[n] = lanes[i]
	}
	fresh := map[string]*lane{}
	var retiring []*lane
	for i := range cfg.Printers {
		pc := &cfg.Printers[i]
		ol, had := old[pc.Name]
		switch {
		case !had:
			res.Added = append(res.Added, pc.Name)
		case !samePrinter(ol.pc, pc):
			res.Changed = append(res.Changed, pc.Name)
			retiring = append(retiring, ol)
		default:
			continue
		}
		l, err := newLane(a, pc, a.open(pc))
		if err != nil {
			for _, f := range fresh {
				f.closeDevice()
			}
			return a.refuse(res, err)
		}
		l.restoring = true
		fresh[pc.Name] = l
	}
	removed := map[string]*lane{}
	for _, n := range names {
		if _, ok := cfg.Printer(n); !ok {
			res.Removed = append(res.Removed, n)
			removed[n] = old[n]
			retiring = append(retiring, old[n])
		}
	}
	res.RestartNeeded = restartNeeded(a.cfg, cfg)
	res.Applied = true
	if len(fresh) == 0 && len(removed) == 0 {
		a.live.Store(cfg)
		a.log.Info("config reloaded: no printer changed", "config", cfg.Path, "restart_needed", res.RestartNeeded)
		return res, nil
	}
	a.log.Info("config reload: applying", "config", cfg.Path, "added", res.Added, "changed", res.Changed, "removed", res.Removed, "restart_needed", res.RestartNeeded)

	// Intake: removed printers answer unknown_printer from now on, changed
	// ones queue into their new lane's inbox, which runs once the old lane
	// has stopped. Added printers take intake only once restored.
	a.swapLanes(func(m map[string]*lane) {
		for n := range removed {
			delete(m, n)
		}
		for _, n := range res.Changed {
			m[n] = fresh[n]
		}
	}, cfg)

	// Each old lane finishes its job in flight (its completion barrier
	// included) and stops; its tasks stay in the spool.
	done := make([]bool, len(retiring))
	var wg sync.WaitGroup
	for i, l := range retiring {
		wg.Add(1)
		go func() { defer wg.Done(); done[i] = a.retire(l) }()
	}
	wg.Wait()
	if slices.Contains(done, false) {
		// The agent is stopping: leave it the lanes that still run, so it
		// stops them as usual, and drop the new ones.
		a.swapLanes(func(m map[string]*lane) {
			for i, l := range retiring {
				if !done[i] {
					m[l.name] = l
				} else if m[l.name] == fresh[l.name] {
					delete(m, l.name)
				}
			}
			for n, f := range fresh {
				if m[n] == f {
					delete(m, n)
				}
			}
		}, a.live.Load())
		for _, f := range fresh {
			f.closeDevice()
		}
		return res, fmt.Errorf("reload: %w: the agent is stopping", api.ErrUnavailable)
	}
	for _, l := range retiring {
		if l.failedOver != "" && fresh[l.name] != nil {
			// The new lane starts routed home and fails over again on its
			// own if its printer is still down.
			a.observe(Event{Printer: l.name, Switch: true})
		}
	}

	// New lanes start and restore their queues from the spool.
	for _, n := range append(slices.Clone(res.Changed), res.Added...) {
		l := fresh[n]
		a.startLane(a.ctx, l)
		if err := a.restoreLane(a.ctx, n, l); err != nil {
			a.log.Error("reload: restoring a lane from the spool failed; its tasks reach it at their deadline or at the next start", "printer", n, "err", err)
			res.Notes = append(res.Notes, fmt.Sprintf("%s: restore from the spool failed: %v", n, err))
		}
		l.post(msgRestored{})
	}
	a.swapLanes(func(m map[string]*lane) {
		for _, n := range res.Added {
			m[n] = fresh[n]
		}
	}, cfg)
	a.live.Store(cfg)

	// Removed printers' waiting tasks go to their backup, or wait.
	for n, l := range removed {
		res.Notes = append(res.Notes, a.sweep(ctx, n, l.pc.Backup)...)
	}
	// Raw ports follow their printers: removed or changed ones close, new
	// ones open.
	res.Notes = append(res.Notes, a.syncRawPorts(cfg)...)
	a.log.Info("config reloaded", "config", cfg.Path, "added", res.Added, "changed", res.Changed, "removed", res.Removed, "restart_needed", res.RestartNeeded)
	return res, nil
}

// swapLanes replaces the lane registry with a copy edited by edit, ordered
// as cfg's printers.
func (a *Agent) swapLanes(edit func(map[string]*lane), cfg *config.Config) {
	a.lanesMu.Lock()
	defer a.lanesMu.Unlock()
	m := make(map[string]*lane, len(a.lanes))
	for n, l := range a.lanes {
		m[n] = l
	}
	edit(m)
	order := make([]string, 0, len(m))
	for i := range cfg.Printers {
		if _, ok := m[cfg.Printers[i].Name]; ok {
			order = append(order, cfg.Printers[i].Name)
		}
	}
	// Lanes kept from before that cfg does not list (an aborted reload):
	// last, so none is forgotten.
	for n := range m {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	a.lanes, a.order = m, order
}

// retire stops a lane a reload replaces or removes: no new job starts, the
// one in flight finishes its completion barrier, then its goroutines end
// and its device is closed. It returns false, leaving the lane running,
// when the agent stops first.
func (a *Agent) retire(l *lane) bool {
	l.post(msgStop{})
	slow := time.NewTimer(5 * time.Second)
	defer slow.Stop()
	for {
		select {
		case <-l.idle:
			l.stopRun()
			l.wg.Wait()
			l.closeDevice()
			return true
		case <-slow.C:
			l.log.Warn("reload: waiting for the job in flight to finish before the printer's lane stops")
		case <-a.quit:
			return false
		}
	}
}

// sweep hands on the waiting tasks of printer name, which a reload removed
// and whose lane has stopped: each goes home when it was failed over here
// from a printer still configured, else to backup (when configured) with
// the FAILOVER banner, else it waits with reason PRINTER_REMOVED. It
// returns one note per outcome for the reload's result.
func (a *Agent) sweep(ctx context.Context, name, backup string) []string {
	var notes []string
	moved, held, failed := 0, 0, 0
	var after []byte
	for {
		items, next, err := a.spool.QueuePage(name, after, restorePage)
		if err != nil {
			a.log.Error("reload: cannot read a removed printer's queue", "printer", name, "err", err)
			return append(notes, fmt.Sprintf("%s: its queue could not be read (%v); its tasks time out at their deadline", name, err))
		}
		for _, it := range items {
			if it.Err != nil {
				a.quarantine(name, it)
				continue
			}
			switch a.handOn(ctx, it.Task, name, backup) {
			case handedOn:
				moved++
			case waits:
				held++
			case notMoved:
				failed++
			}
		}
		if next == nil {
			break
		}
		after = next
	}
	if moved > 0 {
		notes = append(notes, fmt.Sprintf("%s removed: %d waiting tasks moved to another printer", name, moved))
	}
	if held > 0 {
		notes = append(notes, fmt.Sprintf("%s removed: %d waiting tasks wait with reason %s for a manager", name, held, ReasonPrinterRemoved))
	}
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("%s removed: %d tasks could not be recorded as moved (spool trouble); they time out at their deadline", name, failed))
	}
	return notes
}

// observe tells the agent's observers about an event that happened outside
// any lane.
func (a *Agent) observe(e Event) {
	if obs := a.opts.Observe; obs != nil {
		obs(e)
	}
}

// laneless answers a message for a task whose printer a reload removed
// (owner names no running lane): deadlines, cancels and a manager's retry
// on another printer still work. It reports whether it handled msg.
func (a *Agent) laneless(taskNo, printer string, msg laneMsg) bool {
	switch m := msg.(type) {
	case msgDeadline:
		a.deadlineMissed(taskNo, "")
	case msgCancel:
		t, err := a.spool.Get(taskNo)
		if err == nil && !spool.CanTransition(t.State, spool.StateCanceled) {
			err = fmt.Errorf("%w: task %s is %s", api.ErrConflict, taskNo, t.State)
		}
		if err == nil {
			t, err = a.spool.Transition(taskNo, t.State, spool.StateCanceled, spool.Change{Reason: "canceled"})
			if err != nil {
				err = fmt.Errorf("%w: %v", api.ErrConflict, err)
			}
		}
		if err == nil {
			a.taskEnded(taskNo)
			a.observe(Event{Printer: printer, Task: t})
		}
		m.reply <- cancelResult{task: t, err: err}
	case msgRetry:
		m.reply <- a.retryLaneless(taskNo, printer, m.printer)
	default:
		return false
	}
	return true
}

// retryLaneless queues a HELD task of removed printer from on printer to,
// marked POSSIBLE DUPLICATE, compare-and-set on HELD.
func (a *Agent) retryLaneless(taskNo, from, to string) retryResult {
	if to == "" {
		return retryResult{err: fmt.Errorf("%w: printer %q of task %s was removed from the config; choose a printer to retry it on (configured: %v)", api.ErrUnknownPrinter, from, taskNo, a.laneNames())}
	}
	if a.lane(to) == nil {
		return retryResult{err: fmt.Errorf("%w: %q (configured: %v)", api.ErrUnknownPrinter, to, a.laneNames())}
	}
	dup := true
	t, err := a.spool.TransitionPath(taskNo, spool.StateHeld, []spool.State{spool.StateQueued}, spool.Change{Target: &to, PossibleDuplicate: &dup, Reason: "retried by a manager on " + to})
	if err != nil {
		if spoolTrouble(err) {
			return retryResult{err: fmt.Errorf("retry %s: the spool could not record it: %w", taskNo, err)}
		}
		return retryResult{err: fmt.Errorf("%w: task %s changed meanwhile: %v", api.ErrConflict, taskNo, err)}
	}
	a.handTo(t)
	a.observe(Event{Printer: from, Task: t})
	return retryResult{task: t}
}
