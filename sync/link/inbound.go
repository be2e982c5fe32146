package link

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"printgate/spool"
	"printgate/sync/wire"
)

// Bounds of a job's timeout, as the intake's (PROTOCOL.md §3).
const (
	minJobTimeout = time.Second
	maxJobTimeout = 24 * time.Hour
)

// worker acts on jobs and commands one at a time, in the order they came.
func (s *session) worker() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case m := <-s.work:
			s.handle(m)
		}
	}
}

func (s *session) handle(m wire.Message) {
	var reply wire.Message
	switch m := m.(type) {
	case *wire.Job:
		reply = s.job(m)
	case *wire.Reprint:
		t, err := s.l.opts.Backend.Reprint(s.ctx, m.TaskNo)
		reply = s.result(m.ID, t, err)
	case *wire.Cancel:
		t, err := s.l.opts.Backend.Cancel(s.ctx, m.TaskNo)
		reply = s.result(m.ID, t, err)
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
	if reply == nil {
		return
	}
	if err := s.send(reply); err != nil {
		// The connection is gone; the cloud resends what it has no answer to.
		s.l.log.Debug("cloud link: answer not sent", "type", reply.Type(), "err", err)
	}
}

// job submits a cloud job and returns its job_ack, or nil when the agent
// cannot take it now and the cloud should resend it.
func (s *session) job(j *wire.Job) wire.Message {
	reject := func(code, msg string) wire.Message {
		s.l.log.Warn("cloud job rejected", "task_no", j.TaskNo, "code", code, "message", msg)
		return &wire.JobAck{TaskNo: j.TaskNo, Result: wire.ResultRejected, Error: &wire.Problem{Code: code, Message: msg}}
	}
	nt := spool.NewTask{
		TaskNo: j.TaskNo, Printer: j.Printer, Priority: j.Priority, Origin: spool.OriginCloud,
		Payload: j.Payload, Document: j.Document,
	}
	if j.Timeout != "" {
		d, err := time.ParseDuration(j.Timeout)
		if err != nil || d <= 0 {
			return reject("bad_timeout", fmt.Sprintf("timeout %q is not a positive duration like \"90s\" or \"2m\"", j.Timeout))
		}
		if d < minJobTimeout || d > maxJobTimeout {
			return reject("bad_timeout", fmt.Sprintf("timeout %q is out of range: it must be from 1s to 24h", j.Timeout))
		}
		nt.Timeout = d
	}
	t, dup, err := s.l.opts.Backend.Submit(s.ctx, nt)
	if err != nil {
		code, msg, retry := s.l.opts.Classify(err)
		if retry {
			s.l.log.Warn("cloud job not taken for now; the cloud resends it", "task_no", j.TaskNo, "err", err)
			return nil
		}
		return reject(code, msg)
	}
	res := wire.ResultAccepted
	if dup {
		res = wire.ResultDuplicate
	}
	return &wire.JobAck{TaskNo: j.TaskNo, Result: res, State: t.State}
}

// result is the command_result for a reprint or cancel.
func (s *session) result(id string, t *spool.Task, err error) wire.Message {
	if err != nil {
		code, msg, _ := s.l.opts.Classify(err)
		s.l.log.Warn("cloud command failed", "id", id, "code", code, "err", err)
		return &wire.CommandResult{ID: id, Error: &wire.Problem{Code: code, Message: msg}}
	}
	return &wire.CommandResult{ID: id, OK: true, TaskNo: t.TaskNo}
}

// Limits of log_lines frames: a line is cut to maxLogLine bytes and a
// frame carries about logFrameBytes of lines, well under MaxFrameBytes
// even when JSON escaping doubles them.
const (
	maxLogLine    = 16 << 10
	logFrameBytes = 256 << 10
)

// tail starts a logs_tail, replacing one with the same id; it runs until
// logs_stop, the connection's end, or the Tailer returns.
func (s *session) tail(m *wire.LogsTail) wire.Message {
	tl := s.l.opts.Tailer
	if tl == nil {
		return &wire.CommandResult{ID: m.ID, Error: &wire.Problem{Code: "not_supported", Message: "this agent does not stream its logs"}}
	}
	ctx, stop := context.WithCancel(s.ctx)
	s.tmu.Lock()
	if old, ok := s.tails[m.ID]; ok {
		old()
	}
	s.tails[m.ID] = stop
	s.tmu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer stop()
		send := func(lines []string) error { return s.sendLines(ctx, m.ID, lines) }
		if err := tl.Tail(ctx, m.Level, m.Contains, m.Lines, m.Follow, send); err != nil && ctx.Err() == nil {
			s.l.log.Warn("cloud link: log tail ended", "id", m.ID, "err", err)
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
