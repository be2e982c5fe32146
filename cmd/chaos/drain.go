package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"printgate/agent/apiclient"
	"printgate/sync/wire"
)

// drainAndCheck waits, with every fault over, until each accepted task is
// terminal and known to the cloud as the agent knows it (or until the
// deadline leaves only checkReserve), then collects and checks.
func (r *runner) drainAndCheck(ctx context.Context) *Result {
	end, _ := ctx.Deadline()
	drainEnd := end.Add(-checkReserve)
	r.logf("drain: faults over, WAN up; waiting until %s for every accepted task to end", drainEnd.Format(time.TimeOnly))
	dctx, cancel := context.WithDeadline(ctx, drainEnd)
	defer cancel()
	lastSay := time.Now()
	for {
		if r.agent.pid() == 0 {
			r.logf("drain: the agent is not running; starting it")
			if err := r.agent.start(dctx); err != nil {
				r.logf("drain: %v", err)
			}
		}
		r.resubmitOnce(dctx)
		missing := r.missing(dctx)
		if missing == "" {
			r.logf("drain: settled after %s", time.Since(r.start.Add(r.plan.Length)).Round(time.Second))
			break
		}
		if time.Since(lastSay) >= 10*time.Second {
			r.logf("drain: still waiting: %s", missing)
			lastSay = time.Now()
		}
		if !sleepUntil(dctx, time.Now().Add(time.Second)) {
			r.logf("drain: cut short by the deadline: %s", missing)
			break
		}
	}
	o := r.observe(ctx)
	res := check(o)
	res.Seed, res.Command, res.Planned = r.o.Seed, r.o.Command, len(r.plan.Tasks)
	r.mu.Lock()
	res.PeakCPU = round1(r.peakCPU)
	res.PeakRSSMiB = round1(float64(r.peakRSSKiB) / 1024)
	res.WANDownShare = math.Round(1000*r.wanDown.Seconds()/r.plan.Length.Seconds()) / 1000
	r.mu.Unlock()
	res.AcksDropped = int(r.acksDropped.Load())
	_, res.ReloadsFailed = r.reloadTimes()
	res.KeptOpenConns = r.keptOpenConns()
	for no := range o.Accepted {
		if r.plan != nil && isCloud(r.plan, no) {
			res.AcceptedCloud++
		} else {
			res.AcceptedLAN++
		}
	}
	return res
}

// isCloud reports whether the plan sent taskNo as a cloud job.
func isCloud(p *plan, taskNo string) bool {
	if strings.HasPrefix(taskNo, "RT") {
		return false // a retries' probe, over the LAN
	}
	i, err := strconv.Atoi(taskNo[2:8])
	return err == nil && i < len(p.Tasks) && p.Tasks[i].Cloud
}

// missing says what the drain still waits for, or "" when nothing.
func (r *runner) missing(ctx context.Context) string {
	r.mu.Lock()
	unanswered := len(r.unanswered)
	r.mu.Unlock()
	if unanswered > 0 {
		return fmt.Sprintf("%d LAN submissions unanswered", unanswered)
	}
	if n := len(r.cloud.Jobs(r.agentID)); n > 0 {
		return fmt.Sprintf("%d cloud jobs not acknowledged (cloud link up: %v)", n, r.cloud.Connected(r.agentID))
	}
	api, err := r.listTasks(ctx)
	if err != nil {
		return err.Error()
	}
	open := 0
	for _, no := range r.accepted() {
		if t, ok := api[no]; !ok || !t.State.Terminal() {
			open++
		}
	}
	for no, t := range api {
		// Raw jobs, and the versions the retries made.
		if (t.Origin == "raw" || t.Origin == "manager" || strings.HasPrefix(no, "RAW_")) && !t.State.Terminal() {
			open++
		}
	}
	if open > 0 {
		return fmt.Sprintf("%d accepted tasks (raw jobs included) not terminal", open)
	}
	last := map[string]int{}
	lastState := map[string]string{}
	for _, e := range r.cloud.Events(r.agentID) {
		if e.N > last[e.TaskNo] {
			last[e.TaskNo], lastState[e.TaskNo] = e.N, string(e.State)
		}
	}
	behind := 0
	for no, t := range api {
		if lastState[no] != string(t.State) {
			behind++
		}
	}
	if behind > 0 {
		return fmt.Sprintf("the cloud lags the spool on %d tasks (cloud link up: %v)", behind, r.cloud.Connected(r.agentID))
	}
	return ""
}

// accepted lists the tasks the agent accepted: LAN answers 202 or 200,
// cloud jobs acknowledged accepted or duplicate.
func (r *runner) accepted() []string {
	var out []string
	r.mu.Lock()
	for no, code := range r.lanAnswer {
		if code == http.StatusAccepted || code == http.StatusOK {
			out = append(out, no)
		}
	}
	r.mu.Unlock()
	seen := map[string]bool{}
	for _, a := range r.cloud.Acks(r.agentID) {
		if (a.Result == wire.ResultAccepted || a.Result == wire.ResultDuplicate) && !seen[a.TaskNo] {
			seen[a.TaskNo] = true
			out = append(out, a.TaskNo)
		}
	}
	sort.Strings(out)
	return out
}

// listTasks reads every task from the agent's API, a page at a time.
func (r *runner) listTasks(ctx context.Context) (map[string]apiTask, error) {
	out := map[string]apiTask{}
	err := apiclient.ListTasks(ctx, r.api, nil, 1000, func(page []apiTask) {
		for _, t := range page {
			out[t.TaskNo] = t
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// observe collects what the run saw for check.
func (r *runner) observe(ctx context.Context) observed {
	o := observed{
		Accepted: map[string]int{}, Refused: map[string]string{},
		Backups: backups, Printers: numPrinters, End: time.Now(),
		AgentExits: r.agent.unexpectedExits(),
	}
	for _, no := range r.accepted() {
		if i, err := strconv.Atoi(no[2:8]); err == nil && i < len(r.plan.Tasks) {
			o.Accepted[no] = r.plan.Tasks[i].Printer
		}
	}
	r.mu.Lock()
	for no, p := range r.probes {
		o.Accepted[no] = p
	}
	for no, code := range r.lanAnswer {
		if code != http.StatusAccepted && code != http.StatusOK {
			o.Refused[no] = fmt.Sprintf("LAN API answered HTTP %d", code)
		}
	}
	for no, err := range r.queueErrs {
		o.Refused[no] = "the cloud would not queue it: " + err
	}
	for no := range r.unanswered {
		o.Unanswered = append(o.Unanswered, no)
	}
	o.Kills = r.kills
	o.Retried = map[string][]string{}
	for no, a := range r.retried {
		o.Retried[no] = a
	}
	o.KillTimes = append([]time.Time(nil), r.killTimes...)
	o.Reloads, _ = r.reloadTimes()
	o.Outs = make([][]timeSpan, len(r.outs))
	for i, list := range r.outs {
		o.Outs[i] = append([]timeSpan(nil), list...)
		o.Spells += len(list)
	}
	armed := append([]int(nil), r.armed...)
	r.mu.Unlock()
	for i, p := range r.printers {
		o.DropsFired += armed[i] - p.Armed()
		o.Tickets = append(o.Tickets, p.Tickets()...)
		if pend := p.Pending(); len(pend.Lines) > 0 {
			o.Tickets = append(o.Tickets, pend)
		}
		for len(o.PaperOf) < len(o.Tickets) {
			o.PaperOf = append(o.PaperOf, i)
		}
	}
	o.Raw = r.rawSnapshot()
	for _, a := range r.cloud.Acks(r.agentID) {
		if a.Result == wire.ResultRejected {
			why := "rejected"
			if a.Error != nil {
				why += ": " + a.Error.Code + " " + a.Error.Message
			}
			o.Refused[a.TaskNo] = "the agent's job_ack: " + why
		}
	}
	for _, j := range r.cloud.Jobs(r.agentID) {
		o.UnackedJobs = append(o.UnackedJobs, j.Job.TaskNo)
	}
	o.Events = r.cloud.Events(r.agentID)
	o.OrderWarnings = int(r.orderWarns.Load())
	api, err := r.listTasks(ctx)
	if err != nil {
		r.logf("collect: %v (every accepted task counts as unknown to the agent)", err)
	}
	o.API = api
	o.RawTags = map[string]string{}
	for no, t := range api {
		if t.Origin != "raw" && !strings.HasPrefix(no, "RAW_") {
			continue
		}
		b, err := r.payload(ctx, no)
		if err != nil {
			r.logf("collect: %v", err)
			continue
		}
		o.RawTags[no] = rawTag(b)
	}
	return o
}

// payload reads a task's stored bytes from the agent's API.
func (r *runner) payload(ctx context.Context, taskNo string) ([]byte, error) {
	return r.api.Payload(ctx, taskNo, 1<<20)
}
