package rawport

import (
	"log/slog"
	"time"
)

// A connection's memory is its job (at most Options.MaxJobBytes), the
// bytes of a command still arriving, one read's buffer and a decoder that
// keeps at most decoderBytes: no bit image of a job is expanded in full
// before it is whole. Past ConnFreeBytes a job being read takes room from
// its Limiter's budget (limiter.go), and waits unread when there is none.

// room reports whether the job being read may take one more read, taking
// what it needs from the shared budget if it can.
func (c *conn) room() bool {
	// A slice grows by a quarter or more when appended to: count its
	// capacity, and two reads' worth for the growth.
	need := cap(c.data) + len(c.buf) + 2*readChunk - ConnFreeBytes
	if need <= c.charged {
		return true
	}
	step := max(need-c.charged, memStep)
	if c.p.o.Limit.takeMem(step) {
		c.charged += step
		return true
	}
	return false
}

// awaitRoom waits, not reading, until the job being read has room for
// another read (room). The first job in the port's line does not wait, so
// the line always moves; nor does one past MaxJobDuration (the read after
// ends it) or on a port that is closing (its drain is short). The wait is
// not quiet on the client's part: the job's quiet time starts anew after
// it.
func (c *conn) awaitRoom() {
	waited := false
	for !c.room() {
		first, moved := c.p.line.first(c.turn)
		if c.hasTurn && first {
			break
		}
		if closing, _ := c.p.draining(); closing || time.Since(c.opened) >= c.p.o.MaxJobDuration {
			break
		}
		freed := c.p.o.Limit.memFreed()
		if c.room() { // given back before freed was taken
			break
		}
		if !waited {
			waited = true
			c.p.lines.log(c.log, slog.LevelInfo, "rawport: raw jobs being read hold the memory budget of the raw ports; this connection waits unread until one is stored",
				"size", len(c.data)+len(c.buf), "budget_bytes", MaxMemory)
		}
		t := time.NewTimer(time.Second)
		select {
		case <-freed:
		case <-moved:
		case <-t.C:
		case <-c.p.lnClosed:
		case <-c.p.ctx.Done():
		}
		t.Stop()
	}
	if waited {
		c.lastRead = time.Now()
	}
}

// releaseMem gives back what the job held of the shared budget.
func (c *conn) releaseMem() {
	c.p.o.Limit.giveMem(c.charged)
	c.charged = 0
}
