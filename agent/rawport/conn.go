package rawport

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"time"

	"printgate/drivers/escpos/decode"
)

// A job's content is every command of the stream except:
//   - the ones the port answers or strips (DLE EOT n, DLE ENQ n, GS r n,
//     GS I n, GS ( H fn48, GS a n, and the strip table's: strip.go): they
//     are not in Job.Data at all;
//   - ESC @ (initialize) and mode settings (code table, print mode,
//     alignment, ...: see classify), kept in Data but not content: they
//     print nothing;
//   - NUL padding before the first content, dropped.
//
// A connection that carries no content makes no job: that is a POS checking
// the printer's status, often after setting a code table (ESC t n, GS r 1
// from node-thermal-printer's getStatus).

const (
	// readChunk is how much one read takes from the socket.
	readChunk = 32 << 10
	// answerTimeout bounds the write of one answer. A client that does not
	// read its answers gets no more of them (a printer drops them too).
	answerTimeout = 2 * time.Second
	// answerQuiet and answerHold gather the answers to a burst of queries
	// into one write: the answers wait until the client has sent nothing
	// for answerQuiet, and never longer than answerHold. A library that
	// asks DLE EOT 1-4 at once reads the four answers as one chunk
	// (@node-escpos/core's getStatuses fails on fewer than 4 bytes), and
	// sends each query as a write of its own, which reach the port in
	// several reads.
	answerQuiet = 20 * time.Millisecond
	answerHold  = 100 * time.Millisecond
	// decoderSteps is how many commands one Decoder executes before the port
	// starts a fresh one. The port only needs command lengths and cuts from
	// it, but the Decoder keeps what it prints (a row per LF, an item per
	// drawer kick), up to hundreds of bytes for one byte of input; a fresh
	// decoder bounds that memory. The only mode that changes command
	// lengths, Kanji mode (FS &), is carried over.
	decoderSteps = 1024
	// decoderBytes bounds the bytes one Decoder executes the same way: it
	// keeps a copy of them and expands bit images into rows (an ESC * 0
	// band six times over), which for a job of bands was several times
	// the job.
	decoderBytes = 8 << 10
)

// conn reads one client connection: it answers queries as they arrive and
// cuts the stream into jobs. It runs on one goroutine.
type conn struct {
	p      *Port
	c      net.Conn
	remote string
	log    *slog.Logger

	dec     *decode.Decoder
	steps   int           // commands run by dec
	stepped int           // bytes run by dec
	cjk     bool          // Kanji mode, carried to a fresh decoder
	q       *decode.Query // the query the last Step raised

	buf []byte // bytes read and not executed yet: an incomplete command
	rt  byte   // real-time scanner: 1 after DLE, 2 after DLE EOT

	// The job being read.
	data    []byte
	content bool // data holds content (see above)
	// cutEnd says the job has cut its paper and printed nothing since: what
	// came after the cut, if anything, is drawer pulses, beeps and settings.
	cutEnd  bool
	opened  time.Time // real time the job opened (content or a partial command); zero when none
	started time.Time // Options.Now at its first content

	// lastRead is when the job last grew: bytes that went into Data or
	// into a command still arriving. Status queries, their answers and
	// stripped commands are not activity (docs/DESIGN.md, invariant 13): a
	// client polling the status keeps neither a job open nor its turn.
	lastRead time.Time
	// grown counts the bytes added to Data, to tell activity (lastRead).
	grown uint64
	// out holds answers not written yet, since outSince; lastByte is when
	// the client last sent anything (answerQuiet).
	out         []byte
	outSince    time.Time
	lastByte    time.Time
	answersDead bool

	// strips counts the commands the strip table took out of the job being
	// read, by rule name, for the job's log line.
	strips map[string]int

	// What keeps the connection open when it carries no job (hold.go):
	// idleSince is when it last had none, its arrival or the end of its
	// last job, and only content moves it (status queries and padding do
	// not); hadJob says a job was taken on it; grace, once set, is the
	// last moment for a job's first printable byte (noJobDeadline); ran
	// counts the commands executed. countedIdle says the port counts it
	// among its address's connections without a job.
	ip          netip.Addr
	idleSince   time.Time
	hadJob      bool
	grace       time.Time
	ran         uint64
	countedIdle bool

	// charged is what the job being read holds of the shared memory
	// budget (Limiter, memory.go).
	charged int

	// The connection's place in the port's line (turns): held from its
	// arrival, or from the first bytes of a later job, until the job is
	// stored or dropped; given up when no job opens within IdleGap.
	turn    uint64
	hasTurn bool
	turnAt  time.Time
	// slow says the job being read gave up its place for arriving slower
	// than the floor rate (floorExpiry): it takes a new one, at the
	// back, only once it is whole.
	slow bool
}

func newConn(p *Port, c net.Conn, remote string, ip netip.Addr, turn uint64) *conn {
	now := time.Now()
	cn := &conn{p: p, c: c, remote: remote, cjk: p.o.Decode.PowerOnCJK,
		log:  p.o.Logger.With("printer", p.printer, "remote", remote),
		turn: turn, hasTurn: true, turnAt: now,
		ip: ip, idleSince: now, countedIdle: true}
	cn.newDecoder()
	return cn
}

// takeTurn queues the job that is opening behind every job that opened
// before it on this port.
func (c *conn) takeTurn() {
	if !c.hasTurn {
		c.turn, c.hasTurn, c.turnAt = c.p.line.take(), true, time.Now()
	}
}

// giveTurn lets the next connection in line store its job.
func (c *conn) giveTurn() {
	if c.hasTurn {
		c.p.line.give(c.turn)
		c.hasTurn = false
	}
}

// turnExpiry is when a place in line is given up, and whether there is
// such a time: a connection does not hold back the jobs behind it longer
// than the quiet time that would end a job. With no job open that is
// IdleGap after the place was taken (a connection that is silent, or only
// asks status); with a job stalled inside a command (which quiet does not
// end), IdleGap after its last byte: the job then takes a new place, behind
// the ones that passed it, when it goes on. And a job open longer than
// its bytes take at the floor rate (floorExpiry) gives its place up for
// good: it is stored, whole, behind the jobs that passed it.
func (c *conn) turnExpiry() (time.Time, bool) {
	switch {
	case !c.hasTurn:
		return time.Time{}, false
	case !c.open():
		return c.turnAt.Add(c.p.o.IdleGap), true
	}
	e := c.floorExpiry()
	if len(c.buf) > 0 {
		e = earlier(e, c.lastRead.Add(c.p.o.IdleGap))
	}
	return e, true
}

// floorExpiry is when the open job has taken longer than its bytes may at
// the floor rate: TurnAllowance plus one second per MinJobRate bytes,
// from when it opened. A POS sends a ticket in milliseconds; a client that
// trickles a byte a second keeps its job (it is still read and stored),
// not the port's turn.
func (c *conn) floorExpiry() time.Time {
	size := len(c.data) + len(c.buf)
	return c.opened.Add(TurnAllowance + time.Duration(size)*time.Second/MinJobRate)
}

// yieldTurn gives up the connection's place when turnExpiry passed at now.
// A job over its floor time is marked slow, so it queues again only once
// whole, and the port says so (rate-limited): its client is not a POS
// printing at a POS's pace.
func (c *conn) yieldTurn(now time.Time) {
	if c.content && !now.Before(c.floorExpiry()) && !c.slow {
		c.slow = true
		c.p.lines.log(c.log, slog.LevelWarn, "rawport: a job arriving slower than the floor rate gave up its place in line; the jobs behind it print first and it prints once whole",
			"open_for", now.Sub(c.opened).Round(time.Millisecond), "size", len(c.data)+len(c.buf), "floor_bytes_per_second", MinJobRate)
	}
	c.giveTurn()
}

func (c *conn) newDecoder() {
	c.dec = decode.NewWith(c.p.o.Decode)
	c.dec.OnQuery = func(q decode.Query) { c.q = &q }
	c.steps, c.stepped = 0, 0
	switch {
	case c.cjk && !c.p.o.Decode.PowerOnCJK:
		c.dec.Step([]byte{0x1C, '&'})
	case !c.cjk && c.p.o.Decode.PowerOnCJK:
		c.dec.Step([]byte{0x1C, '.'})
	}
}

// open reports whether a job is being read: content, or a command that has
// begun to arrive.
func (c *conn) open() bool { return c.content || len(c.buf) > 0 }

// deadline is when the next read gives up: with no content, when the
// connection has carried no job for too long (noJobDeadline); otherwise
// the quiet time that would end the job (none inside a command: a boundary
// never splits one), and never later than MaxJobDuration after the job
// opened.
func (c *conn) deadline() time.Time {
	d := c.quietDeadline()
	if e, ok := c.turnExpiry(); ok && e.Before(d) {
		d = e
	}
	if f, ok := c.flushAt(); ok && f.Before(d) {
		d = f
	}
	if closing, until := c.p.draining(); closing && until.Before(d) {
		return until
	}
	return d
}

// quietDeadline is deadline without the port's drain.
func (c *conn) quietDeadline() time.Time {
	o := c.p.o
	if !c.content {
		return c.noJobDeadline()
	}
	end := c.opened.Add(o.MaxJobDuration)
	if len(c.buf) > 0 {
		return end
	}
	gap := o.IdleGap
	if c.cutEnd {
		gap = o.CutIdle
	}
	q := c.lastRead.Add(gap)
	if q.Before(end) {
		return q
	}
	return end
}

func (c *conn) serve() {
	completed := false // the client ended the stream and its job was accepted
	defer c.giveTurn()
	defer func() {
		// In order (FIN) only once the client ended its stream and its
		// job was stored. Every other end is a reset: a POS that keeps
		// its connection open and sees a FIN (an idle close, a stop, a
		// reload) writes its next ticket into a closed connection
		// without an error, while after a reset that write fails and
		// the POS reconnects or says so.
		if completed {
			orderlyClose(c.c)
			return
		}
		resetClose(c.c)
	}()
	defer c.flush()
	defer c.releaseMem()
	rbuf := make([]byte, readChunk)
	c.lastRead = time.Now()
	for {
		c.awaitRoom()
		if err := c.c.SetReadDeadline(c.deadline()); err != nil {
			return // closed under us
		}
		n, err := c.c.Read(rbuf)
		now := time.Now()
		if n > 0 {
			c.lastByte = now
			ran, grown := c.ran, c.grown
			if !c.receive(rbuf[:n], now) {
				return
			}
			if c.grown != grown || len(c.buf) > 0 {
				c.lastRead = now
			}
			c.noteNoJob(now, c.ran > ran)
		}
		if f, ok := c.flushAt(); ok && !now.Before(f) {
			c.flush()
		}
		if c.p.isDropping() {
			// Agent shutdown, drain and grace over: the job is not
			// accepted; the connection is reset so the client resends.
			c.dropAtClose()
			return
		}
		if c.open() && now.Sub(c.opened) >= c.p.o.MaxJobDuration {
			c.p.lines.log(c.log, slog.LevelWarn, "rawport: job still streaming after the time limit, ending it truncated",
				"limit", c.p.o.MaxJobDuration, "size", len(c.data)+len(c.buf))
			if c.finish(true) {
				resetClose(c.c)
			}
			return
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if closing, until := c.p.draining(); closing && !now.Before(until) {
				// The drain is over. A job that ends on a command
				// boundary is accepted and the connection closed in
				// order: whole if its paper was cut and nothing printed
				// since (a drawer kick or a beep after the cut is common),
				// else marked truncated, since its client may not be
				// done. A job that ends inside a command cannot be sent
				// to a printer: it is dropped, reported, and the client
				// reset.
				if !c.open() {
					c.resetAtClose()
					return
				}
				if len(c.buf) > 0 {
					c.dropAtClose()
					return
				}
				if !c.cutEnd {
					c.p.lines.log(c.log, slog.LevelWarn, "rawport: port closing while a job had no cut yet, taking it truncated", "size", len(c.data))
				}
				if c.finish(!c.cutEnd) {
					c.resetAtClose()
				}
				return
			}
			if e, ok := c.turnExpiry(); ok && !now.Before(e) {
				c.yieldTurn(now) // the next job goes first
				continue
			}
			if !c.content {
				if now.Before(c.noJobDeadline()) {
					continue
				}
				c.closeNoJob(now)
				return
			}
			if now.Before(c.quietDeadline()) {
				continue // the deadline was the answers' (flushed above)
			}
			if !c.finish(false) { // quiet after a complete command: the job ends
				return
			}
			continue
		}
		// The client closed (EOF, or a half close: CUPS then waits for our
		// close, which comes after Accept) or reset the connection.
		truncated := !errors.Is(err, io.EOF) || len(c.buf) > 0
		if truncated && c.content {
			c.p.lines.log(c.log, slog.LevelWarn, "rawport: connection ended mid-job", "err", err, "partial_command", len(c.buf))
		}
		completed = c.finish(truncated)
		return
	}
}

// receive takes bytes read from the client. It reports false when it reset
// the connection (job too large, Accept failed).
func (c *conn) receive(b []byte, now time.Time) bool {
	// Real-time status is answered as the bytes arrive, even inside another
	// command, as a printer does (and the emulator).
	for _, x := range b {
		switch {
		case c.rt == 2 && x >= 1 && x <= 4:
			c.answer([]byte{statusAnswer(x, c.p.printerStatus())})
			c.rt = 0
		case x == 0x10:
			c.rt = 1
		case c.rt == 1 && x == 0x04:
			c.rt = 2
		default:
			c.rt = 0
		}
	}
	c.buf = append(c.buf, b...)
	i := 0
	for i < len(c.buf) {
		c.q = nil
		if r, n := stripped(c.buf[i:]); r != nil {
			if n == 0 {
				break // the rest of a stripped command is still to come
			}
			c.strip(r)
			i += n
			continue
		}
		n := c.dec.Step(c.buf[i:])
		if n == 0 {
			break
		}
		cmd := c.buf[i : i+n]
		i += n
		_, cut := c.dec.Cut()
		barrier := c.command(cmd, cut)
		c.ran++
		c.stepped += n
		if c.steps++; c.steps >= decoderSteps || c.stepped >= decoderBytes {
			c.newDecoder()
		}
		if barrier != nil {
			// GS ( H asks to hear when everything before it is printed; for
			// the port that is when the job is on disk.
			if !c.finish(false) {
				return false
			}
			c.answer(barrierAnswer(*barrier))
		}
	}
	c.buf = append(c.buf[:0], c.buf[i:]...)
	if size := len(c.data) + len(c.buf); size > c.p.o.MaxJobBytes {
		c.p.refuse(c.log, c.remote, size, fmt.Errorf("%w: over the %d byte limit", ErrTooLarge, c.p.o.MaxJobBytes))
		resetClose(c.c)
		return false
	}
	if !c.open() {
		c.opened = time.Time{}
	} else {
		if c.opened.IsZero() {
			c.opened = now
		}
		if !c.slow {
			c.takeTurn() // a new place if the job gave its own up (turnExpiry)
		}
	}
	return true
}

// command files one executed command into the job, answering in-order
// queries. cut says the command cut the paper. It returns the process id of
// a GS ( H fn48, which ends the job.
func (c *conn) command(cmd []byte, cut bool) *[4]byte {
	if cmd[0] == 0x10 && len(cmd) >= 2 && (cmd[1] == 0x04 || cmd[1] == 0x05) {
		// DLE EOT was answered on arrival; DLE ENQ is a recovery request
		// meant for the printer printgate itself talks to.
		return nil
	}
	if len(cmd) == 1 && cmd[0] == 0x10 {
		// A DLE that starts no real-time command prints nothing; kept, it
		// could pair with the first byte after it at the printer (the next
		// job's) and make a command neither job sent.
		return nil
	}
	if q := c.q; q != nil {
		switch q.Cmd {
		case 'r':
			if a, ok := transmitStatus(q.N, c.p.printerStatus()); ok {
				c.answer([]byte{a})
			}
			return nil
		case 'I':
			if a := printerID(q.N, c.p.o.Decode.DoubleByte); a != nil {
				c.answer(a)
			}
			return nil
		case 'a':
			// Automatic status back is not passed on: the real printer would
			// send unsolicited status into printgate's session. Like an
			// Epson, the port answers once on enable (drawer closed, online,
			// paper present); a healthy virtual printer never changes, so
			// nothing follows.
			if q.N != 0 {
				c.answer([]byte{0x14, 0x00, 0x00, 0x00})
			}
			return nil
		case 'H':
			id := q.ID
			return &id
		case '@':
			c.cjk = c.p.o.Decode.PowerOnCJK
			if !c.content {
				c.data = c.data[:0] // ESC @ clears what came before it
			}
			c.data = append(c.data, cmd...)
			c.grown += uint64(len(cmd))
			return nil
		}
	}
	if len(cmd) == 1 && cmd[0] == 0x00 && !c.content {
		return nil // padding
	}
	if len(cmd) == 2 && cmd[0] == 0x1C {
		switch cmd[1] {
		case '&':
			c.cjk = true
		case '.':
			c.cjk = false
		}
	}
	c.data = append(c.data, cmd...)
	c.grown += uint64(len(cmd))
	k := classify(cmd)
	if cut {
		k = kindPrint
	}
	if k == kindSetting {
		return nil // kept for the job it sets up, if one follows
	}
	if !c.content {
		c.content = true
		c.started = c.p.o.Now()
	}
	switch {
	case cut:
		c.cutEnd = true
	case k == kindPrint:
		c.cutEnd = false
	}
	return nil
}

// finish ends the job being read, handing it to the Sink if it has content.
// It reports false when it reset the connection (Accept failed) or the port
// is closing.
func (c *conn) finish(truncated bool) bool {
	defer c.resetJob()
	defer c.giveTurn()
	c.flush() // the answers to what came before the job's end go first
	c.logStrips()
	if !c.content {
		return true
	}
	// Stored in the order the jobs arrived: wait for the ones before.
	c.takeTurn()
	if err := c.p.line.wait(c.p.ctx, c.turn); err != nil || c.p.isDropping() {
		c.dropAtClose()
		return false
	}
	j := Job{
		Printer:   c.p.printer,
		Data:      c.data,
		Truncated: truncated,
		Remote:    c.remote,
		Started:   c.started,
		// Runs on this goroutine, inside Accept: the next job of the
		// port goes to the store behind this one while it is written.
		InOrder: c.giveTurn,
	}
	var taskNo string
	for {
		j.Ended = c.p.o.Now()
		dup, forget := c.p.dups.note(j.Data, j.Ended)
		j.Duplicate = dup
		var err error
		if taskNo, err = c.p.sink.Accept(c.p.ctx, j); err == nil {
			break
		}
		forget() // not stored: its retry is not a duplicate
		// A spool that cannot take a job now (Sink.Ready fails too): the
		// job waits here, whole, until it can (ready.go), and is offered
		// again; at the port's close it is refused as below.
		if c.p.sink.Ready(c.p.printer) != nil && c.p.awaitReady(c.p.ctx, c.p.lnClosed) {
			continue
		}
		c.p.refuse(c.log, c.remote, len(j.Data), fmt.Errorf("printer %s: spool did not take the job: %w", c.p.printer, err))
		resetClose(c.c)
		return false
	}
	// Jobs last: whoever sees a job counted sees its flags counted too.
	if j.Duplicate {
		c.p.duplicates.Add(1)
	}
	if j.Truncated {
		c.p.truncated.Add(1)
	}
	c.p.jobs.Add(1)
	// One line per job, rate-limited like the rest: a client can send
	// 50 jobs a second (rate_raw), and each task's history is in the spool.
	c.p.lines.log(c.log, slog.LevelInfo, "rawport: job accepted", "size", len(j.Data), "task_no", taskNo,
		"truncated", j.Truncated, "duplicate", j.Duplicate)
	return true
}

// resetJob starts a new job: fresh data (the Sink owns the old slice) and a
// fresh decoder, so its memory is that of one job.
func (c *conn) resetJob() {
	c.releaseMem()
	if c.content {
		c.newDecoder()
		c.hadJob, c.idleSince, c.grace = true, time.Now(), time.Time{}
	}
	c.data, c.content, c.cutEnd, c.opened, c.started, c.slow = nil, false, false, time.Time{}, time.Time{}, false
	c.syncIdle()
}

// dropAtClose reports the job being read, if there is one, as refused: the
// port closed (agent stop, or a reload that closed it) before it could be
// taken. The caller resets the connection, so its client resends.
func (c *conn) dropAtClose() {
	if !c.open() {
		return
	}
	err := fmt.Errorf("%w: the job was not taken", ErrClosing)
	if len(c.buf) > 0 {
		err = fmt.Errorf("%w: the job ended inside a command (%d bytes of % x…)", ErrClosing, len(c.buf), c.buf[:min(len(c.buf), 3)])
	}
	c.p.refuse(c.log, c.remote, len(c.data)+len(c.buf), fmt.Errorf("printer %s: %w", c.p.printer, err))
}

// answer queues a status answer to the client, written by flush with the
// answers to the rest of the burst its query came in (answerQuiet).
func (c *conn) answer(b []byte) {
	if c.answersDead {
		return
	}
	if len(c.out) == 0 {
		c.outSince = time.Now()
	}
	c.out = append(c.out, b...)
}

// flushAt is when the queued answers are written: once the client has
// been quiet for answerQuiet, at most answerHold after the first.
func (c *conn) flushAt() (time.Time, bool) {
	if len(c.out) == 0 {
		return time.Time{}, false
	}
	return earlier(c.lastByte.Add(answerQuiet), c.outSince.Add(answerHold)), true
}

// flush writes the queued answers in one write.
func (c *conn) flush() {
	if len(c.out) == 0 {
		return
	}
	b := c.out
	c.out = nil
	_ = c.c.SetWriteDeadline(time.Now().Add(answerTimeout))
	if _, err := c.c.Write(b); err != nil {
		c.answersDead = true
		c.log.Debug("rawport: client does not take answers", "err", err)
	}
}

// printerStatus is what the port's answers say of the printer.
func (p *Port) printerStatus() PrinterStatus {
	if p.o.Status == nil {
		return PrinterStatus{}
	}
	return p.o.Status()
}

// refuse reports a job read but not handed over.
func (p *Port) refuse(log *slog.Logger, remote string, size int, err error) {
	p.refused.Add(1)
	p.lines.log(log, slog.LevelError, "rawport: job refused", "size", size, "err", err)
	p.sink.Refused(p.printer, remote, size, err)
}

// resetAtClose notes that the port's close (agent stop, or a reload that
// closed or reopened the port) resets a connection its client kept open
// after everything it sent was stored or was no job: the POS's next write
// fails instead of going into a closed connection, so it reconnects.
func (c *conn) resetAtClose() {
	if !c.hadJob && c.ran == 0 {
		return // it sent nothing: nothing to say
	}
	c.p.lines.log(c.log, slog.LevelWarn, "rawport: port closing (agent stop or reload): a connection kept open is reset; the POS's next write fails and it reconnects, so no ticket is lost")
}
