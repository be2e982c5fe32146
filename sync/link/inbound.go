package link

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"printgate/spool"
	"printgate/sync/wire"
)

// worker acts on jobs and commands one at a time, in the order they came.
func (s *session) worker() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case w := <-s.work:
			if w.refused != nil {
				s.reply(s.refusedJob(w.refused))
				continue
			}
			s.handle(w.msg)
		}
	}
}

func (s *session) handle(m wire.Message) {
	var reply wire.Message
	switch m := m.(type) {
	case *wire.Job:
		reply = s.job(m)
	case *wire.Reprint:
		reply = s.command(m.ID, func(ctx context.Context) (*spool.Task, error) { return s.l.opts.Backend.Reprint(ctx, m.TaskNo) })
	case *wire.Cancel:
		reply = s.command(m.ID, func(ctx context.Context) (*spool.Task, error) { return s.l.opts.Backend.Cancel(ctx, m.TaskNo) })
	case *wire.LogsTail:
		reply = s.tail(m)
	case *wire.LogsStop:
		s.tmu.Lock()
		if stop, ok := s.tails[m.ID]; ok {
			stop()
			delete(s.tails, m.ID)
		}
		s.tmu.Unlock()
	}
	s.reply(reply)
}

// reply sends the worker's answer, if there is one.
func (s *session) reply(reply wire.Message) {
	if reply == nil {
		return
	}
	if err := s.send(reply); err != nil {
		// The connection is gone; the cloud resends what it has no answer to.
		s.l.log.Debug("cloud link: answer not sent", "type", reply.Type(), "err", err)
	}
}

// rejection is a job the link refuses in its own terms, a PROTOCOL.md §3
// code and a message. It travels to the agent as NewTask.Invalid, so that
// a task_no already known is answered duplicate before the link refuses
// anything (docs/DESIGN.md, invariant 7), and comes back wrapped in Submit's
// error.
type rejection struct{ code, message string }

func (r *rejection) Error() string { return r.code + ": " + r.message }

// job submits a cloud job and returns its job_ack, or nil when the agent
// cannot take it now and the cloud should resend it.
func (s *session) job(j *wire.Job) wire.Message {
	nt := spool.NewTask{
		TaskNo: j.TaskNo, Printer: j.Printer, Priority: j.Priority, Origin: spool.OriginCloud,
		Payload: j.Payload, Document: j.Document,
	}
	d, err := spool.ParseTimeout(j.Timeout)
	if err != nil {
		nt.Invalid = &rejection{code: "bad_timeout", message: err.Error()}
	}
	nt.Timeout = d
	return s.submit(nt, true)
}

// refusedJob answers a job frame Decode refused whose task_no could be
// read: duplicate if the agent knows it, else job_ack rejected with the
// code §3 would give (so the cloud stops resending it).
func (s *session) refusedJob(fe *wire.FrameError) wire.Message {
	return s.submit(spool.NewTask{TaskNo: fe.TaskNo, Origin: spool.OriginCloud,
		Invalid: &rejection{code: jobCode(fe), message: fe.Error()}}, false)
}

// submit hands nt to the agent and returns the job_ack; logRejected logs
// a rejection (a refused frame was logged as it arrived).
func (s *session) submit(nt spool.NewTask, logRejected bool) wire.Message {
	reject := func(code, msg string) wire.Message {
		if logRejected {
			// A cloud can send such jobs by the thousand.
			s.l.peerWarns.Warn(s.l.log, "cloud job rejected", "task_no", nt.TaskNo, "code", code, "message", msg)
		}
		return &wire.JobAck{TaskNo: nt.TaskNo, Result: wire.ResultRejected, Error: &wire.Problem{Code: code, Message: msg}}
	}
	t, dup, err := s.l.opts.Backend.Submit(s.ctx, nt)
	if err != nil {
		if rej := (*rejection)(nil); errors.As(err, &rej) {
			return reject(rej.code, rej.message)
		}
		code, msg, retry := s.l.opts.Classify(err)
		if retry {
			// Rate-limited: a cloud over the agent's rate provokes it
			// with every job.
			s.l.peerWarns.Warn(s.l.log, "cloud job not taken for now; the cloud resends it", "task_no", nt.TaskNo, "err", err)
			return nil
		}
		return reject(code, msg)
	}
	res := wire.ResultAccepted
	if dup {
		res = wire.ResultDuplicate
	}
	return &wire.JobAck{TaskNo: nt.TaskNo, Result: res, State: t.State}
}

// result is the command_result for a reprint or cancel, and whether it is
// final: false when the agent could not act now and a resend should run.
func (s *session) result(id string, t *spool.Task, err error) (*wire.CommandResult, bool) {
	if err != nil {
		code, msg, retry := s.l.opts.Classify(err)
		// A cloud can make its commands fail at will (a cancel of
		// another door's task, an unknown task_no): rate-limited.
		s.l.peerWarns.Warn(s.l.log, "cloud command failed", "id", id, "code", code, "err", err)
		return &wire.CommandResult{ID: id, Error: &wire.Problem{Code: code, Message: msg}}, !retry
	}
	return &wire.CommandResult{ID: id, OK: true, TaskNo: t.TaskNo}, true
}

// Limits of log_lines frames: a line is cut to maxLogLine bytes and a
// frame carries about logFrameBytes of lines, well under MaxFrameBytes
// even when JSON escaping doubles them.
const (
	maxLogLine    = 16 << 10
	logFrameBytes = 256 << 10
)

// MaxTails is how many logs_tail streams one connection runs at once; a
// further one (with a new id) is answered command_result too_many_tails.
const MaxTails = 4

// tail starts a logs_tail, replacing one with the same id; it runs until
// logs_stop, the connection's end, or the Tailer returns. At most MaxTails
// run at once.
func (s *session) tail(m *wire.LogsTail) wire.Message {
	tl := s.l.opts.Tailer
	if tl == nil {
		return &wire.CommandResult{ID: m.ID, Error: &wire.Problem{Code: "not_supported", Message: "this agent does not stream its logs"}}
	}
	ctx, stop := context.WithCancel(s.ctx)
	s.tmu.Lock()
	if old, ok := s.tails[m.ID]; ok {
		old()
	} else if len(s.tails) >= MaxTails {
		// Each tail holds a goroutine and sends as fast as the log grows:
		// a cloud that starts thousands and reads none would hold the
		// agent's memory.
		s.tmu.Unlock()
		stop()
		return &wire.CommandResult{ID: m.ID, Error: &wire.Problem{Code: "too_many_tails",
			Message: fmt.Sprintf("this agent streams at most %d log tails per connection at once; stop one (logs_stop) first", MaxTails)}}
	}
	s.tails[m.ID] = stop
	s.tmu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer stop()
		defer func() {
			// A tail that ended by itself gives its place back; one a
			// later logs_tail of the same id replaced is not this one's
			// to remove (its context was cancelled first).
			s.tmu.Lock()
			if ctx.Err() == nil {
				delete(s.tails, m.ID)
			}
			s.tmu.Unlock()
		}()
		send := func(lines []string) error { return s.sendLines(ctx, m.ID, lines) }
		if err := tl.Tail(ctx, m.Level, m.Contains, m.Lines, m.Follow, send); err != nil && ctx.Err() == nil {
			s.l.peerWarns.Warn(s.l.log, "cloud link: log tail ended", "id", m.ID, "err", err)
		}
	}()
	return nil
}

// sendLines sends lines as log_lines frames of bounded size.
func (s *session) sendLines(ctx context.Context, id string, lines []string) error {
	var chunk []string
	size := 0
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := s.send(&wire.LogLines{ID: id, Lines: chunk})
		chunk, size = nil, 0
		return err
	}
	for _, line := range lines {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(line) > maxLogLine {
			cut := maxLogLine
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			line = line[:cut] + "…"
		}
		if size+len(line) > logFrameBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		chunk = append(chunk, line)
		size += len(line)
	}
	return flush()
}
