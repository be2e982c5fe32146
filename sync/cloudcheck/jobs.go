package cloudcheck

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"

	"printgate/spool"
	"printgate/sync/wire"
)

var jobsNames = []string{"jobs.ack_after_fsync", "jobs.lost_ack_duplicate", "jobs.rejected"}

// jobs queues jobs through the test API and checks how the cloud treats
// their acks: kept until job_ack, resent under the same task_no after a
// lost ack, a duplicate taken as an ack, a rejection recorded and not
// resent.
func (ch *checker) jobs(ctx context.Context) []Result {
	if why := ch.needAPI("queue jobs for the agent"); why != "" {
		return ch.skipAll(jobsNames, why)
	}
	p, tok, err := ch.agent(ctx, "jobs")
	if err != nil {
		return ch.skipAll(jobsNames, err.Error())
	}
	defer p.close()
	p.start(tok)
	if !ch.online(ctx, p) {
		return ch.skipAll(jobsNames, "the agent never got online (see handshake.welcome)")
	}
	var out []Result
	if ch.wanted("jobs.ack_after_fsync") {
		out = append(out, ch.checkAckAfterFsync(ctx, p))
	}
	if ch.wanted("jobs.lost_ack_duplicate") {
		out = append(out, ch.checkLostAck(ctx, p))
	}
	if ch.wanted("jobs.rejected") {
		out = append(out, ch.checkRejected(ctx, p))
	}
	return out
}

// jobAcks returns the job_acks for taskNo the agent sent (delivered or
// cut), in order.
func jobAcks(list []seen, taskNo string) []seen {
	var out []seen
	for _, s := range messages(list, toCloud, wire.TypeJobAck) {
		if s.msg.(*wire.JobAck).TaskNo == taskNo {
			out = append(out, s)
		}
	}
	return out
}

func queuedHas(list []apiQueued, taskNo string) (apiQueued, bool) {
	for _, q := range list {
		if q.Job.TaskNo == taskNo {
			return q, true
		}
	}
	return apiQueued{}, false
}

func (ch *checker) checkAckAfterFsync(ctx context.Context, p *player) Result {
	c := ch.begin("jobs.ack_after_fsync")
	taskNo := p.id + "_fsync_v1"
	release := p.holdSubmit(taskNo)
	defer release()
	if err := ch.api.queue(ctx, p.id, wire.Job{TaskNo: taskNo, Printer: printerName, Payload: []byte("cloudcheck fsync\n")}); err != nil {
		return c.fail("", "queueing %s failed: %v", taskNo, err)
	}
	t := ch.clock.NewTimer(ch.opts.Step)
	defer t.Stop()
	select {
	case <-p.held:
	case <-ctx.Done():
		return c.skip("interrupted")
	case <-t.C():
		return c.fail("push a queued job to the agent's connection at once", "%s did not reach the agent within %v", taskNo, ch.opts.Step)
	}
	// The agent holds the job before its fsync: the cloud must still count
	// it as unacknowledged.
	heldFrom := ch.clock.Now()
	ch.sleep(ctx, ch.opts.Quiet/3)
	jobs, err := ch.api.jobs(ctx, p.id)
	if err != nil {
		return c.fail("", "reading the queue: %v", err)
	}
	acks, err := ch.api.acks(ctx, p.id)
	if err != nil {
		return c.fail("", "reading the acks: %v", err)
	}
	if _, ok := queuedHas(jobs, taskNo); !ok {
		return c.fail("keep a job queued until its job_ack arrives: the agent acknowledges only once the job is on its disk, and a connection lost before that must not lose the job",
			"the cloud no longer lists %s as waiting for its ack while the agent had not yet stored it", taskNo)
	}
	for _, a := range acks {
		if a.TaskNo == taskNo {
			return c.fail("record a job_ack only when the agent sends one", "the cloud recorded an ack for %s (%s) before the agent sent any", taskNo, a.Result)
		}
	}
	held := ch.clock.Now()
	release()
	if !ch.until(ctx, ch.opts.Step, p.rec, func() bool { return len(jobAcks(p.rec.snapshot(), taskNo)) > 0 }) {
		return c.fail("", "the agent's job_ack for %s was not seen within %v", taskNo, ch.opts.Step)
	}
	var recorded bool
	ch.until(ctx, ch.opts.Step, nil, func() bool {
		jobs, err1 := ch.api.jobs(ctx, p.id)
		acks, err2 := ch.api.acks(ctx, p.id)
		if err1 != nil || err2 != nil {
			return false
		}
		_, waiting := queuedHas(jobs, taskNo)
		for _, a := range acks {
			recorded = recorded || a.TaskNo == taskNo && a.Result == wire.ResultAccepted
		}
		return recorded && !waiting
	})
	if !recorded {
		return c.fail("take a job_ack accepted as the end of the job's delivery: record it and stop resending",
			"after the agent's job_ack accepted, the cloud still lists %s as waiting, or recorded no ack for it", taskNo)
	}
	return c.pass("%s stayed in the cloud's queue while the agent held it before its fsync (%s), and left it with the job_ack accepted",
		taskNo, ms(held.Sub(heldFrom)))
}

func (ch *checker) checkLostAck(ctx context.Context, p *player) Result {
	c := ch.begin("jobs.lost_ack_duplicate")
	taskNo := p.id + "_lost_v1"
	payload := []byte("cloudcheck lost ack " + p.id + "\n")
	var cut atomic.Bool
	p.rec.setCut(func(s seen) bool {
		a, ok := s.msg.(*wire.JobAck)
		return ok && s.dir == toCloud && a.TaskNo == taskNo && cut.CompareAndSwap(false, true)
	})
	defer p.rec.setCut(nil)
	if err := ch.api.queue(ctx, p.id, wire.Job{TaskNo: taskNo, Printer: printerName, Payload: payload}); err != nil {
		return c.fail("", "queueing %s failed: %v", taskNo, err)
	}
	if !ch.until(ctx, ch.opts.Step, p.rec, func() bool { return len(jobAcks(p.rec.snapshot(), taskNo)) > 0 }) {
		return c.fail("push a queued job to the agent's connection at once", "%s did not reach the agent within %v", taskNo, ch.opts.Step)
	}
	if _, err := p.sp.Get(taskNo); err != nil {
		return c.skip("the agent did not store %s before its ack (%v)", taskNo, err)
	}
	// The ack is lost with the connection; the job is on the agent's disk.
	// The cloud must resend it, same task_no, and take duplicate as the ack.
	sameJob := func(j *wire.Job) bool { return bytes.Equal(j.Payload, payload) }
	var resent []*wire.Job
	dupAcked := false
	ch.until(ctx, ch.opts.Step, p.rec, func() bool {
		resent, dupAcked = nil, false
		cutConn := 0
		for _, s := range p.rec.snapshot() {
			if s.kind == "cut" && cutConn == 0 {
				cutConn = s.conn
			}
			if cutConn == 0 || s.conn <= cutConn || s.msg == nil {
				continue
			}
			if j, ok := s.msg.(*wire.Job); ok && s.dir == fromCloud && sameJob(j) {
				resent = append(resent, j)
			}
			if a, ok := s.msg.(*wire.JobAck); ok && s.dir == toCloud && a.TaskNo == taskNo && a.Result == wire.ResultDuplicate {
				dupAcked = true
			}
		}
		return len(resent) > 0 && (resent[0].TaskNo != taskNo || dupAcked)
	})
	switch {
	case len(resent) == 0:
		return c.fail("keep a job queued until its job_ack arrives and resend it, same task_no, on the agent's next connection",
			"the connection was cut before the agent's job_ack for %s reached the cloud; the job was not resent on the next connection within %v", taskNo, ch.opts.Step)
	case resent[0].TaskNo != taskNo:
		return c.fail("resend a job under its own task_no: the task_no is what lets the agent know it has the job already",
			"after the lost ack the cloud resent the job as %s instead of %s: the agent took it as a new task and would print it twice", resent[0].TaskNo, taskNo)
	case !dupAcked:
		return c.fail("", "the agent did not answer the resent %s duplicate", taskNo)
	}
	// After duplicate, nothing more of this job.
	ch.sleep(ctx, ch.opts.Quiet)
	again := 0
	var renamed []string
	dupAt := -1
	for i, s := range p.rec.snapshot() {
		if a, ok := s.msg.(*wire.JobAck); ok && s.dir == toCloud && a.TaskNo == taskNo && a.Result == wire.ResultDuplicate && dupAt < 0 {
			dupAt = i
			continue
		}
		if dupAt < 0 || s.dir != fromCloud {
			continue
		}
		if j, ok := s.msg.(*wire.Job); ok && sameJob(j) {
			if j.TaskNo == taskNo {
				again++
			} else {
				renamed = append(renamed, j.TaskNo)
			}
		}
	}
	jobs, err := ch.api.jobs(ctx, p.id)
	if err != nil {
		return c.fail("", "reading the queue: %v", err)
	}
	_, waiting := queuedHas(jobs, taskNo)
	tasks := 0
	if page, err := p.sp.List(spool.ListOptions{Limit: 1000}); err == nil {
		for _, t := range page.Tasks {
			if bytes.Equal(t.Payload, payload) {
				tasks++
			}
		}
	}
	switch {
	case len(renamed) > 0:
		return c.fail("resend a job under its own task_no", "the cloud also sent the job as %s: the agent would print it twice", strings.Join(renamed, ", "))
	case again > 0 || waiting:
		return c.fail("take job_ack duplicate as an ack: the agent has the job; stop resending it",
			"after the agent answered %s duplicate the cloud sent it %s more and still lists it as waiting: %v", taskNo, plural(again, "time", "times"), waiting)
	case tasks != 1:
		return c.fail("", "the agent holds %d tasks with the job's payload, want 1", tasks)
	}
	return c.pass("the ack of %s was lost with its connection; the cloud resent it, same task_no, on the next one, took duplicate as the ack and sent it no more: one task on the agent", taskNo)
}

func (ch *checker) checkRejected(ctx context.Context, p *player) Result {
	c := ch.begin("jobs.rejected")
	taskNo := p.id + "_rejected_v1"
	if err := ch.api.queue(ctx, p.id, wire.Job{TaskNo: taskNo, Printer: "no-such-printer", Payload: []byte("cloudcheck rejected\n")}); err != nil {
		return c.fail("", "queueing %s failed: %v", taskNo, err)
	}
	var ack *wire.JobAck
	if !ch.until(ctx, ch.opts.Step, p.rec, func() bool {
		if l := jobAcks(p.rec.snapshot(), taskNo); len(l) > 0 {
			ack = l[0].msg.(*wire.JobAck)
			return true
		}
		return false
	}) {
		return c.fail("push a queued job to the agent's connection at once", "%s did not reach the agent within %v", taskNo, ch.opts.Step)
	}
	if ack.Result != wire.ResultRejected || ack.Error == nil {
		return c.skip("the agent answered %s %s, not rejected", taskNo, ack.Result)
	}
	var rec *wire.JobAck
	waiting := true
	ch.until(ctx, ch.opts.Step, nil, func() bool {
		acks, err1 := ch.api.acks(ctx, p.id)
		jobs, err2 := ch.api.jobs(ctx, p.id)
		if err1 != nil || err2 != nil {
			return false
		}
		for i := range acks {
			if acks[i].TaskNo == taskNo {
				rec = &acks[i]
			}
		}
		_, waiting = queuedHas(jobs, taskNo)
		return rec != nil && !waiting
	})
	switch {
	case rec == nil:
		return c.fail("record a job_ack rejected with its error code: it says why the store will not print the job",
			"the agent answered %s rejected %s; the cloud recorded no ack for it", taskNo, ack.Error.Code)
	case rec.Result != wire.ResultRejected || rec.Error == nil || rec.Error.Code != ack.Error.Code:
		return c.fail("record the job_ack as the agent sent it", "the agent answered rejected %s; the cloud recorded %s %+v", ack.Error.Code, rec.Result, rec.Error)
	case waiting:
		return c.fail("take job_ack rejected as final: resending the job will not help", "after rejected %s the cloud still lists %s as waiting", ack.Error.Code, taskNo)
	}
	// A reconnect must not bring it back.
	before := p.rec.snapshot()
	p.rec.dropAll()
	if !ch.until(ctx, ch.opts.Step, p.rec, func() bool {
		return len(p.rec.snapshot()) > len(before) && ch.onlineAgain(p, len(before))
	}) {
		return c.fail("", "the agent did not get online again after its connection was cut")
	}
	ch.sleep(ctx, ch.opts.Quiet)
	for _, s := range p.rec.snapshot()[len(before):] {
		if j, ok := s.msg.(*wire.Job); ok && s.dir == fromCloud && j.TaskNo == taskNo {
			return c.fail("take job_ack rejected as final: do not resend the job", "the cloud resent %s after the agent had rejected it %s", taskNo, ack.Error.Code)
		}
	}
	return c.pass("the agent rejected %s with %s; the cloud recorded the code and did not resend it after a reconnect", taskNo, ack.Error.Code)
}

// onlineAgain reports whether a welcome arrived after the first skip
// things p's recorder saw.
func (ch *checker) onlineAgain(p *player, skip int) bool {
	list := p.rec.snapshot()
	if len(list) <= skip {
		return false
	}
	return len(messages(list[skip:], fromCloud, wire.TypeWelcome)) > 0
}
