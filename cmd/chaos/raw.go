package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// rawPrinters have a raw port (raw_listen), p0 among them so that raw
// jobs also fail over (p0 → p1).
var rawPrinters = []int{0, 3, 5, 6}

// rawWorkers is how many POS terminals print to the raw ports at once;
// each sends one job at a time and retries it until it is taken.
const rawWorkers = 8

// Raw job timing: the pause before a POS resends, how long one attempt
// may take, and the share of first attempts the POS itself cuts short
// with a reset after the tag line (a POS that crashed mid-ticket), which
// the agent may take as an INCOMPLETE JOB.
const (
	rawResendPause  = 300 * time.Millisecond
	rawAttemptLimit = 10 * time.Second
	rawAbortShare   = 0.08
)

// Write-and-close POS clients: a share of the raw jobs is
// sent as many npm printer libraries send a ticket: connect, write, close,
// without waiting for the agent's close; and in bursts, several terminals
// printing to one kitchen printer at the same moment (a burst goes to the
// port of its first job's printer). Such a POS resends only when it could not
// connect or write; otherwise it never learns what became of the job. The
// check holds the agent to printing every one of them, but those written
// within rawBlindKillWindow before a SIGKILL (bytes the agent had not
// stored yet when it died, or a connection still in the listen backlog).
const (
	rawBlindShare      = 0.3
	rawBurstMax        = 12
	rawBurstGather     = 500 * time.Millisecond
	rawBlindKillWindow = 5 * time.Second
)

// rawJob is what a POS worker knows of one raw job it sent.
type rawJob struct {
	Printer  int
	Attempts int  // connections that carried the job's bytes (aborted included)
	Acked    bool // one attempt ended with an orderly close (EOF)
	Aborted  bool // the first attempt was cut short on purpose with a reset
	// Blind says the job was sent write-and-close; SentAt is when its
	// write completed (zero: it never did, the load ended first).
	Blind  bool
	SentAt time.Time
	// KeptOpen says the job was a kept-open client's ticket (keptopen.go);
	// AckedAt is when its status answer came.
	KeptOpen bool
	AckedAt  time.Time
}

// rawTicket is a raw job's bytes: ESC @, the tag line, a full cut (GS V 0).
// Without the cut it is what an aborted first attempt sends.
func rawTicket(tag string, cut bool) []byte {
	b := append([]byte{0x1b, '@'}, fmt.Sprintf("%s %s\n", rawTagPrefix, tag)...)
	if cut {
		b = append(b, 0x1d, 'V', 0)
	}
	return b
}

// rawTagPrefix starts a raw job's tag line, as "TICKET" starts the others'.
const rawTagPrefix = "RAWTICKET"

// rawTag finds the tag in a raw job's bytes, or "".
func rawTag(payload []byte) string {
	s := string(payload)
	i := strings.Index(s, rawTagPrefix+" ")
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+len(rawTagPrefix)+1:])
	if len(f) == 0 {
		return ""
	}
	return strings.TrimRight(f[0], "\x1d\x00")
}

// rawWorker is one POS: it takes raw jobs off jobs and sends each until
// the agent takes it (EOF after the half close) or ctx ends, pausing
// rawResendPause between attempts. When blind says so it sends a burst
// write-and-close instead (rawBurst).
func (r *runner) rawWorker(ctx context.Context, jobs <-chan int, abort, blind func() bool) {
	for i := range jobs {
		if blind() {
			r.rawBurst(ctx, gatherBurst(ctx, i, jobs))
			continue
		}
		t := r.plan.Tasks[i]
		r.rawMu.Lock()
		j := r.raw[t.No]
		j.Printer = t.Printer
		r.raw[t.No] = j // with no attempt: never sent, the load ended first
		r.rawMu.Unlock()
		first := true
		for ctx.Err() == nil {
			cut := !(first && abort())
			err := r.sendRaw(ctx, r.rawAddrs[t.Printer], rawTicket(t.No, true), cut)
			r.rawMu.Lock()
			j := r.raw[t.No]
			j.Attempts++
			if !cut {
				j.Aborted = true
			}
			if err == nil {
				j.Acked = true
			}
			r.raw[t.No] = j
			r.rawMu.Unlock()
			if err == nil {
				break
			}
			first = false
			if !sleepUntil(ctx, time.Now().Add(rawResendPause)) {
				break
			}
		}
	}
}

// gatherBurst is first and the jobs due within rawBurstGather after it, at
// most rawBurstMax in all: held back a moment, so that they reach the
// agent together, as at a lunch rush.
func gatherBurst(ctx context.Context, first int, jobs <-chan int) []int {
	burst := []int{first}
	t := time.NewTimer(rawBurstGather)
	defer t.Stop()
	for len(burst) < rawBurstMax {
		select {
		case i, ok := <-jobs:
			if !ok {
				return burst
			}
			burst = append(burst, i)
		case <-t.C:
			return burst
		case <-ctx.Done():
			return burst
		}
	}
	return burst
}

// rawBurst sends every job of burst at once to the raw port of the first
// job's printer, each as a write-and-close POS: connect, write, close,
// resending only a job it could not connect or write.
func (r *runner) rawBurst(ctx context.Context, burst []int) {
	printer := r.plan.Tasks[burst[0]].Printer
	var wg sync.WaitGroup
	for _, i := range burst {
		t := r.plan.Tasks[i]
		r.rawMu.Lock()
		j := r.raw[t.No]
		j.Printer, j.Blind = printer, true
		r.raw[t.No] = j
		r.rawMu.Unlock()
		wg.Go(func() {
			for ctx.Err() == nil {
				err := r.sendBlind(ctx, r.rawAddrs[printer], rawTicket(t.No, true))
				r.rawMu.Lock()
				j := r.raw[t.No]
				j.Attempts++
				if err == nil {
					j.SentAt = time.Now()
				}
				r.raw[t.No] = j
				r.rawMu.Unlock()
				if err == nil || !sleepUntil(ctx, time.Now().Add(rawResendPause)) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// sendBlind is one write-and-close attempt. nil means the bytes were
// written and the connection closed: all such a POS ever knows.
func (r *runner) sendBlind(ctx context.Context, addr string, data []byte) error {
	actx, cancel := context.WithTimeout(ctx, rawAttemptLimit)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(actx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("raw job to %s: %w", addr, err)
	}
	deadline, _ := actx.Deadline()
	c.SetDeadline(deadline)
	if _, err := c.Write(data); err != nil {
		c.Close()
		return fmt.Errorf("raw job to %s: %w", addr, err)
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("raw job to %s: close: %w", addr, err)
	}
	return nil
}

// errAborted is the outcome of an attempt the POS cut short on purpose.
var errAborted = errors.New("aborted with a reset after the tag line")

// sendRaw is one attempt: connect, write data, half close, read until the
// agent closes. nil means an orderly close: the job is on disk. With
// whole false it writes data without its cut, waits for the port to read
// it and resets the connection instead.
func (r *runner) sendRaw(ctx context.Context, addr string, data []byte, whole bool) error {
	actx, cancel := context.WithTimeout(ctx, rawAttemptLimit)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(actx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("raw job to %s: %w", addr, err)
	}
	tc := c.(*net.TCPConn)
	defer tc.Close()
	deadline, _ := actx.Deadline()
	tc.SetDeadline(deadline)
	stop := context.AfterFunc(actx, func() { tc.SetDeadline(time.Now()) })
	defer stop()
	if !whole {
		if _, err := tc.Write(data[:len(data)-3]); err != nil {
			return fmt.Errorf("raw job to %s: %w", addr, err)
		}
		sleepUntil(actx, time.Now().Add(100*time.Millisecond))
		tc.SetLinger(0) // Close sends a reset
		return errAborted
	}
	if _, err := tc.Write(data); err != nil {
		return fmt.Errorf("raw job to %s: %w", addr, err)
	}
	if err := tc.CloseWrite(); err != nil {
		return fmt.Errorf("raw job to %s: half close: %w", addr, err)
	}
	if _, err := io.Copy(io.Discard, tc); err != nil {
		return fmt.Errorf("raw job to %s: %w", addr, err)
	}
	return nil // EOF: taken
}

// rawPorts picks a free loopback port for each raw printer, once for the
// whole run: the agent listens there again after every restart.
func rawPorts() (map[int]string, error) {
	out := map[int]string{}
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for _, p := range rawPrinters {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("chaos: pick a raw port: %w", err)
		}
		lns = append(lns, ln)
		out[p] = ln.Addr().String()
	}
	return out, nil
}

// rawSnapshot copies what the POS workers know, for observe.
func (r *runner) rawSnapshot() map[string]rawJob {
	r.rawMu.Lock()
	defer r.rawMu.Unlock()
	out := make(map[string]rawJob, len(r.raw))
	for k, v := range r.raw {
		out[k] = v
	}
	return out
}
