package cloudcheck

import (
	"context"
	"fmt"

	"printgate/spool"
	"printgate/sync/link"
	"printgate/sync/wire"
)

var commandsNames = []string{"commands.reprint", "commands.cancel", "commands.logs", "commands.revoke"}

// commands sends reprint, cancel, logs_tail and logs_stop through the
// test API, and last revokes the agent's token.
func (ch *checker) commands(ctx context.Context) []Result {
	if why := ch.needAPI("send commands to the agent"); why != "" {
		return ch.skipAll(commandsNames, why)
	}
	p, tok, err := ch.agent(ctx, "commands")
	if err != nil {
		return ch.skipAll(commandsNames, err.Error())
	}
	defer p.close()
	printed, open := p.id+"_printed_v1", p.id+"_open_v1"
	// The open task is the cloud's own, as one it may cancel (§5).
	for _, x := range []struct {
		taskNo string
		origin spool.Origin
	}{{printed, spool.OriginLocal}, {open, spool.OriginCloud}} {
		if _, err := p.acceptFrom(x.taskNo, x.origin); err != nil {
			return ch.skipAll(commandsNames, err.Error())
		}
	}
	if err := p.advance(printed, spool.StateQueued, spool.StateSending, spool.StatePrinted); err != nil {
		return ch.skipAll(commandsNames, err.Error())
	}
	p.start(tok)
	if !ch.online(ctx, p) {
		return ch.skipAll(commandsNames, "the agent never got online (see handshake.welcome)")
	}
	var out []Result
	if ch.wanted("commands.reprint") {
		out = append(out, ch.checkReprint(ctx, p, printed))
	}
	if ch.wanted("commands.cancel") {
		out = append(out, ch.checkCancel(ctx, p, open))
	}
	if ch.wanted("commands.logs") {
		out = append(out, ch.checkLogs(ctx, p))
	}
	if ch.wanted("commands.revoke") {
		out = append(out, ch.checkRevoke(ctx, p, tok))
	}
	return out
}

// command sends m through the test API and waits for the agent's
// command_result for id, as the agent sent it and as the cloud recorded
// it. A failure is a sentence for the check.
func (ch *checker) command(ctx context.Context, p *player, id string, m wire.Message) (sent, recorded *wire.CommandResult, problem string) {
	if err := ch.api.command(ctx, p.id, m); err != nil {
		return nil, nil, fmt.Sprintf("sending %s through the test API failed: %v", m.Type(), err)
	}
	ch.until(ctx, ch.opts.Step, p.rec, func() bool {
		for _, s := range messages(p.rec.snapshot(), toCloud, wire.TypeCommandResult) {
			if r := s.msg.(*wire.CommandResult); r.ID == id {
				sent = r
				return true
			}
		}
		return false
	})
	if sent == nil {
		if errs := cloudErrors(p.rec.snapshot()); errs != "" {
			return nil, nil, fmt.Sprintf("no command_result for %s %s; the agent refused frames: %s", m.Type(), id, errs)
		}
		for _, s := range messages(p.rec.snapshot(), toCloud, wire.TypeError) {
			if e := s.msg.(*wire.Error); e.FrameType == m.Type() {
				return nil, nil, fmt.Sprintf("the agent refused the %s frame: %s", m.Type(), describe(e))
			}
		}
		return nil, nil, fmt.Sprintf("the %s %s got no command_result within %v (did it reach the agent?)", m.Type(), id, ch.opts.Step)
	}
	ch.until(ctx, ch.opts.Step, nil, func() bool {
		list, err := ch.api.results(ctx, p.id)
		if err != nil {
			return false
		}
		for i := range list {
			if list[i].ID == id {
				recorded = &list[i]
				return true
			}
		}
		return false
	})
	return sent, recorded, ""
}

func (ch *checker) checkReprint(ctx context.Context, p *player, taskNo string) Result {
	c := ch.begin("commands.reprint")
	id := p.id + "-reprint-1"
	sent, rec, problem := ch.command(ctx, p, id, &wire.Reprint{ID: id, TaskNo: taskNo})
	switch {
	case problem != "":
		return c.fail("send reprint as §5 defines it: {\"type\":\"reprint\",\"id\",\"task_no\"}", "%s", problem)
	case !sent.OK:
		return c.skip("the agent answered the reprint of %s with %+v", taskNo, sent.Error)
	case rec == nil:
		return c.fail("record each command_result by its id", "the agent answered reprint %s ok with %s; the cloud recorded no result for it", id, sent.TaskNo)
	case !rec.OK || rec.TaskNo != sent.TaskNo:
		return c.fail("record the command_result as the agent sent it", "the agent answered ok %s; the cloud recorded ok=%v %q", sent.TaskNo, rec.OK, rec.TaskNo)
	}
	return c.pass("reprint %s answered command_result ok with the new task %s, recorded by the cloud", taskNo, sent.TaskNo)
}

func (ch *checker) checkCancel(ctx context.Context, p *player, taskNo string) Result {
	c := ch.begin("commands.cancel")
	id := p.id + "-cancel-1"
	sent, rec, problem := ch.command(ctx, p, id, &wire.Cancel{ID: id, TaskNo: taskNo})
	switch {
	case problem != "":
		return c.fail("send cancel as §5 defines it: {\"type\":\"cancel\",\"id\",\"task_no\"}", "%s", problem)
	case !sent.OK:
		return c.skip("the agent answered the cancel of %s with %+v", taskNo, sent.Error)
	case rec == nil:
		return c.fail("record each command_result by its id", "the agent answered cancel %s ok; the cloud recorded no result for it", id)
	case !rec.OK:
		return c.fail("record the command_result as the agent sent it", "the agent answered cancel %s ok; the cloud recorded %+v", id, *rec)
	}
	unknown := p.id + "_never_v1"
	id2 := p.id + "-cancel-2"
	sent2, rec2, problem := ch.command(ctx, p, id2, &wire.Cancel{ID: id2, TaskNo: unknown})
	switch {
	case problem != "":
		return c.fail("", "%s", problem)
	case sent2.OK || sent2.Error == nil:
		return c.skip("the agent answered the cancel of an unknown task ok")
	case rec2 == nil:
		return c.fail("record a failed command_result with its error code", "the agent answered cancel %s %s; the cloud recorded no result for it", id2, sent2.Error.Code)
	case rec2.OK || rec2.Error == nil || rec2.Error.Code != sent2.Error.Code:
		return c.fail("record a failed command_result with its error code", "the agent answered cancel %s %s; the cloud recorded %+v", id2, sent2.Error.Code, *rec2)
	}
	return c.pass("cancel %s answered ok; cancel of an unknown task answered %s; both recorded by the cloud", taskNo, sent2.Error.Code)
}

func (ch *checker) checkLogs(ctx context.Context, p *player) Result {
	c := ch.begin("commands.logs")
	id := p.id + "-tail-1"
	for i := 1; i <= 3; i++ {
		p.logs.add(fmt.Sprintf("cloudcheck log line %d", i))
	}
	if err := ch.api.command(ctx, p.id, &wire.LogsTail{ID: id, Lines: 10, Follow: true}); err != nil {
		return c.fail("", "sending logs_tail through the test API failed: %v", err)
	}
	lines := func() []string { l, _ := ch.api.logLines(ctx, p.id, id); return l }
	if !ch.until(ctx, ch.opts.Step, nil, func() bool { return len(lines()) >= 3 }) {
		if errs := cloudErrors(p.rec.snapshot()); errs != "" {
			return c.fail("send logs_tail as §5 defines it", "no log lines recorded; frames refused: %s", errs)
		}
		return c.fail("record log_lines by the tail's id", "the cloud recorded %d of the 3 recent lines within %v", len(lines()), ch.opts.Step)
	}
	p.logs.add("cloudcheck log line 4 (followed)")
	if !ch.until(ctx, ch.opts.Step, nil, func() bool { return len(lines()) >= 4 }) {
		return c.fail("", "a line logged after logs_tail (follow) was not recorded within %v", ch.opts.Step)
	}
	if err := ch.api.command(ctx, p.id, &wire.LogsStop{ID: id}); err != nil {
		return c.fail("", "sending logs_stop through the test API failed: %v", err)
	}
	if !ch.until(ctx, ch.opts.Step, p.rec, func() bool { return len(messages(p.rec.snapshot(), fromCloud, wire.TypeLogsStop)) > 0 }) {
		return c.fail("send logs_stop {id} to the agent's connection", "logs_stop did not reach the agent within %v", ch.opts.Step)
	}
	// The agent ends the tail when it has read the stop.
	if !ch.until(ctx, ch.opts.Step, nil, func() bool { return p.logs.active() == 0 }) {
		return c.fail("send logs_stop with the id of the logs_tail it stops", "the agent's tail still ran %v after logs_stop reached it", ch.opts.Step)
	}
	p.logs.add("cloudcheck log line 5 (after logs_stop)")
	ch.sleep(ctx, ch.opts.Quiet/3)
	if n := len(lines()); n != 4 {
		return c.fail("record log_lines only as the agent sends them", "after logs_stop the cloud's record holds %d lines, want the 4 sent before", n)
	}
	return c.pass("logs_tail (follow) brought the 3 recent lines and a new one to the cloud's record; logs_stop ended the tail, and no more lines came")
}

func (ch *checker) checkRevoke(ctx context.Context, p *player, tok string) Result {
	c := ch.begin("commands.revoke")
	mark := len(p.rec.snapshot())
	if err := ch.api.revoke(ctx, p.id); err != nil {
		return c.fail("", "revoking through the test API failed: %v", err)
	}
	unpaired := ch.until(ctx, ch.opts.Step, p.rec, func() bool { return p.link.State() == link.StateUnpaired })
	after := p.rec.snapshot()[mark:]
	frame := len(messages(after, fromCloud, wire.TypeRevoke)) > 0
	if !unpaired {
		return c.fail("send {\"type\":\"revoke\"} and close the connection, and refuse the token at the handshake from then on (401)",
			"the agent was still %s %v after the revoke (revoke frame seen: %v)", p.link.State(), ch.opts.Step, frame)
	}
	dials := p.link.Stats().Dials
	ch.sleep(ctx, ch.opts.Quiet)
	more := p.link.Stats().Dials - dials
	probe := ch.dial(ctx, tok, p.id, []string{wire.Subprotocol}, false)
	how := "a revoke frame"
	if !frame {
		how = "its next handshake, refused (no revoke frame came)"
	}
	switch {
	case !probe.refusedToken():
		return c.fail("refuse a revoked device token at the handshake with HTTP 401, so an agent that missed the revoke frame goes unpaired too",
			"after the revoke, a handshake with the old token got %s", probe)
	case more > 0:
		return c.fail("", "the agent dialed %d more times after it was unpaired", more)
	case !frame:
		return c.fail("send {\"type\":\"revoke\",\"reason\":...} before closing: the agent learns it at once, not at its next handshake",
			"the agent went unpaired only through %s", how)
	}
	return c.pass("the agent got %s and went unpaired, dialed no more in the %v after, and the old token is refused with %s",
		how, ch.opts.Quiet, probe)
}
