package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"time"

	"printgate/spool"
	"printgate/sync/wire"
)

// The kept-open POS client: one connection to
// keptOpenPrinter's raw port, kept open, a ticket written on it now and
// then, as some POS drivers do. A ticket goes in two writes (its text, then
// the cut, a drawer kick and a DLE EOT 1 status query), as a driver that
// streams a receipt does; the status answer is the POS's acknowledgement:
// the port answers DLE EOT when it reads it, so every byte of the ticket
// before it was read into the job. When the agent ends the connection (a
// reload closed the port, a kill, an idle close) the client connects again;
// a ticket without its answer is sent again on the next connection.
const (
	keptOpenPrinter = 5
	// keptOpenSpacing is the least time from one ticket's answer to the
	// next ticket, a reload's too: more than the port's quiet after a cut
	// (rawport.DefaultCutIdle), so each job holds one ticket, as the
	// checks of the raw tags assume (one tag, one banner per job).
	keptOpenSpacing  = 700 * time.Millisecond
	keptOpenPauseMax = 2500 * time.Millisecond
	// keptOpenPartGapMax bounds the pause between a ticket's two writes:
	// less than every raw_idle_gap of reloadSettings, so the quiet never
	// ends a ticket before its cut, and more than the port's close drain
	// (rawport.DefaultDrainTime), so a reload between the two writes may
	// end the drain on a ticket with no cut yet.
	keptOpenPartGapMax = 800 * time.Millisecond
	keptOpenAnswerWait = 3 * time.Second
	// keptOpenAtReload is how long before a reload a ticket counts as
	// "sent just before the reload": the port's drain had it open.
	keptOpenAtReload = 2 * time.Second
	// keptOpenTagPrefix starts the kept-open tickets' tags (the plan's raw
	// jobs are R and six digits).
	keptOpenTagPrefix = "K"
)

// keptOpenTail ends a kept-open ticket: a full cut, a drawer kick (ESC p 0
// 25 250: a cut then a drawer pulse, as such POS drivers end one) and a
// DLE EOT 1 status query, whose answer acknowledges the ticket.
var keptOpenTail = []byte{0x1d, 'V', 0, 0x1b, 'p', 0, 25, 250, 0x10, 0x04, 0x01}

// keptOpenLoop is the kept-open POS until ctx ends: a ticket every
// keptOpenSpacing–keptOpenPauseMax, or as soon as keptOpenSpacing allows
// when a reload asks for one (reloads.ticket).
func (r *runner) keptOpenLoop(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.plan.Seed, 3000))
	addr := r.rawAddrs[keptOpenPrinter]
	var c *net.TCPConn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var pending string // a ticket not acknowledged yet, sent again
	issued := 0
	var last time.Time // when the last ticket ended
	for {
		var signal func()
		t := time.NewTimer(uniform(rng, keptOpenSpacing, keptOpenPauseMax))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case signal = <-r.reloads.ticket:
			t.Stop()
			if !sleepUntil(ctx, last.Add(keptOpenSpacing)) {
				signal()
				return
			}
		}
		if pending == "" {
			issued++
			pending = fmt.Sprintf("%s%06d", keptOpenTagPrefix, issued)
			r.rawMu.Lock()
			r.raw[pending] = rawJob{Printer: keptOpenPrinter, KeptOpen: true}
			r.rawMu.Unlock()
		}
		if c != nil && endedByAgent(c) {
			c.Close()
			c = nil
		}
		if c == nil {
			var d net.Dialer
			dctx, cancel := context.WithTimeout(ctx, rawAttemptLimit)
			nc, err := d.DialContext(dctx, "tcp", addr)
			cancel()
			if err != nil {
				if signal != nil {
					signal() // the port is closed: reload anyway
				}
				continue
			}
			c = nc.(*net.TCPConn)
			r.reloads.mu.Lock()
			r.reloads.conns++
			r.reloads.mu.Unlock()
		}
		ok := r.keptOpenTicket(ctx, c, pending, rng, signal)
		last = time.Now()
		if ok {
			pending = ""
			continue
		}
		// No answer: give up the connection with a reset (what the port
		// read of the ticket is then taken truncated, if at all) and send
		// the ticket again on the next one.
		c.SetLinger(0)
		c.Close()
		c = nil
	}
}

// endedByAgent reports whether the agent has ended c (an orderly close or
// a reset), as a POS that keeps its connection open notices before it
// prints.
func endedByAgent(c *net.TCPConn) bool {
	c.SetReadDeadline(time.Now().Add(time.Millisecond))
	var b [16]byte
	_, err := c.Read(b[:])
	c.SetReadDeadline(time.Time{})
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// keptOpenTicket writes the ticket tagged tag on c and waits for the
// answer to its status query; it reports whether the answer came. signal,
// when not nil, is called at the point of the ticket a reload is timed for:
// after the text (the port then closes on a job with no cut yet) or after
// the whole ticket (a job that ends with a cut and a drawer kick).
func (r *runner) keptOpenTicket(ctx context.Context, c *net.TCPConn, tag string, rng *rand.Rand, signal func()) bool {
	mid := signal != nil && rng.IntN(2) == 0
	gap := uniform(rng, 0, keptOpenPartGapMax)
	if mid {
		// Mostly past the drain: the port closes before the cut comes.
		gap = uniform(rng, keptOpenPartGapMax/3, keptOpenPartGapMax)
	}
	if signal != nil {
		defer signal()
	}
	r.rawMu.Lock()
	j := r.raw[tag]
	j.Attempts++
	r.raw[tag] = j
	r.rawMu.Unlock()
	c.SetDeadline(time.Now().Add(rawAttemptLimit))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(rawTicket(tag, false)); err != nil {
		return false
	}
	if mid {
		signal()
	}
	if !sleepUntil(ctx, time.Now().Add(gap)) {
		return false
	}
	if _, err := c.Write(keptOpenTail); err != nil {
		return false
	}
	sent := time.Now()
	if signal != nil {
		signal()
	}
	c.SetReadDeadline(time.Now().Add(keptOpenAnswerWait))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return false
	}
	r.rawMu.Lock()
	j = r.raw[tag]
	j.Acked, j.SentAt, j.AckedAt = true, sent, time.Now()
	r.raw[tag] = j
	r.rawMu.Unlock()
	return true
}

// KeptOpenResult is the kept-open client's and the reloads' part of the
// table (Result embeds it).
type KeptOpenResult struct {
	// Reloads are the applied config reloads that changed the kept-open
	// printer's raw settings (each closed and reopened its port);
	// ReloadsFailed those that got no answer or were refused.
	Reloads       int `json:"reloads"`
	ReloadsFailed int `json:"reloads_failed"`
	// KeptOpenConns are the connections the kept-open client made.
	KeptOpenConns int `json:"kept_open_connections"`
	// KeptOpenSent are its tickets sent at least once, KeptOpenAcked
	// those whose status answer came, KeptOpenResends extra attempts.
	KeptOpenSent    int `json:"kept_open_sent"`
	KeptOpenAcked   int `json:"kept_open_acknowledged"`
	KeptOpenResends int `json:"kept_open_resends"`
	// KeptOpenPrinted are acknowledged tickets on paper, KeptOpenTold
	// those not on paper whose failure was told, KeptOpenAtKill those
	// neither, acknowledged within rawBlindKillWindow before a SIGKILL
	// with no reload answered in between (read by the agent, not stored
	// yet when it died: excused).
	KeptOpenPrinted int `json:"kept_open_printed"`
	KeptOpenTold    int `json:"kept_open_told"`
	KeptOpenAtKill  int `json:"kept_open_lost_at_kill"`
	// KeptOpenAtKillTags lists the first few of them, with how long
	// before the kill their answer came.
	KeptOpenAtKillTags []string `json:"kept_open_lost_at_kill_tags,omitempty"`
	// KeptOpenAtReload are acknowledged tickets sent within
	// keptOpenAtReload before a reload: the path the reloads walk.
	KeptOpenAtReload int `json:"kept_open_at_reload"`
	// KeptOpenUnacked are tickets never acknowledged (the load ended
	// first), KeptOpenTruncated copies printed between the INCOMPLETE JOB
	// lines (a ticket the port took without its cut, sent again).
	KeptOpenUnacked   int `json:"kept_open_unacknowledged"`
	KeptOpenTruncated int `json:"kept_open_truncated"`
}

// checkKeptOpen checks one kept-open ticket: acknowledged, it is on paper
// (whole, or truncated when the port took it without its cut) or its
// failure told, unless a kill came right after its answer. Duplicates are
// checkRaw's: one unmarked copy at most, as for every raw tag.
func checkKeptOpen(o observed, tag string, j rawJob, copies []rawCopy, tasks []apiTask, byTask map[string][]wire.Event, res *Result, v *violations) {
	if j.Attempts == 0 {
		return // the load ended before it could be sent
	}
	res.KeptOpenSent++
	res.KeptOpenResends += j.Attempts - 1
	for _, c := range copies {
		if c.Truncated {
			res.KeptOpenTruncated++
		}
	}
	if !j.Acked {
		res.KeptOpenUnacked++
		return
	}
	res.KeptOpenAcked++
	for _, rl := range o.Reloads {
		if at := rl.From; !at.Before(j.SentAt) && at.Sub(j.SentAt) <= keptOpenAtReload {
			res.KeptOpenAtReload++
			break
		}
	}
	if len(copies) > 0 {
		res.KeptOpenPrinted++
		return
	}
	told := anyTask(tasks, func(t apiTask) bool {
		evs := byTask[t.TaskNo]
		failed := t.State == spool.StateTimedOut || t.State == spool.StateFailed || t.State == spool.StateCanceled
		return failed && len(evs) > 0 && evs[len(evs)-1].State == t.State
	})
	switch {
	case told:
		res.KeptOpenTold++
	case killedWithin(o.KillTimes, j.AckedAt, rawBlindKillWindow) && !reloadedBefore(o.Reloads, j.AckedAt, untilKill(o.KillTimes, j.AckedAt)):
		res.KeptOpenAtKill++
		if len(res.KeptOpenAtKillTags) < maxExamples {
			res.KeptOpenAtKillTags = append(res.KeptOpenAtKillTags, fmt.Sprintf("%s (answered %s before the kill)", tag, untilKill(o.KillTimes, j.AckedAt).Round(time.Millisecond)))
		}
	default:
		reload := "no reload near it"
		for _, rl := range o.Reloads {
			if d := rl.From.Sub(j.SentAt); d >= -keptOpenAtReload && d <= keptOpenAtReload {
				reload = fmt.Sprintf("reload at %s", rl.From.Format("15:04:05.000"))
			}
		}
		v.add("raw kept-open job acknowledged, not printed", tag, fmt.Sprintf("p%d, sent %s, answered %s, %s, %d tasks", j.Printer, j.SentAt.Format("15:04:05.000"), j.AckedAt.Format("15:04:05.000"), reload, len(tasks)))
	}
}

// reloadedBefore reports whether a reload answered within d after at: its
// port's drain, over by its answer, had to take a ticket read at at, so a
// kill after it excuses nothing.
func reloadedBefore(reloads []timeSpan, at time.Time, d time.Duration) bool {
	for _, rl := range reloads {
		if !rl.To.Before(at) && rl.To.Sub(at) <= d {
			return true
		}
	}
	return false
}

// untilKill is how long after at the first kill at or after it came.
func untilKill(kills []time.Time, at time.Time) time.Duration {
	for _, k := range kills {
		if !k.Before(at) {
			return k.Sub(at)
		}
	}
	return 0
}

// keptOpenRows are the table's rows of the reloads and the kept-open client.
func keptOpenRows(r *Result) [][2]string {
	return [][2]string{
		{"reloads (raw settings)", fmt.Sprintf("%d of p%d's raw port (%d got no answer)", r.Reloads, keptOpenPrinter, r.ReloadsFailed)},
		{"raw kept-open", fmt.Sprintf("%d sent / %d acked on %d connections (resends %d, never acked %d); %d acked just before a reload", r.KeptOpenSent, r.KeptOpenAcked, r.KeptOpenConns, r.KeptOpenResends, r.KeptOpenUnacked, r.KeptOpenAtReload)},
		{"raw kept-open on paper", fmt.Sprintf("%d acked printed, %d told failed, %d answered just before a kill and not on paper %s; %d truncated copies", r.KeptOpenPrinted, r.KeptOpenTold, r.KeptOpenAtKill, strings.Join(r.KeptOpenAtKillTags, "; "), r.KeptOpenTruncated)},
	}
}

// keptOpenConns is how many connections the kept-open client made.
func (r *runner) keptOpenConns() int {
	r.reloads.mu.Lock()
	defer r.reloads.mu.Unlock()
	return r.reloads.conns
}
