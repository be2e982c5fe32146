package escpos_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"printgate/drivers/escpos"
)

// spoolerPort stands in for the Windows spooler transport (drivers'
// winspool conn): it says it is one-way before anything is read, its reads
// fail at once, and Flush (or Close) hands what was written over as one
// job in the queue.
type spoolerPort struct {
	mu   sync.Mutex
	buf  []byte
	jobs [][]byte
}

func (p *spoolerPort) Read([]byte) (int, error) {
	return 0, errors.New("the spooler gives nothing back")
}
func (p *spoolerPort) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	return len(b), nil
}
func (p *spoolerPort) OneWay() bool                     { return true }
func (p *spoolerPort) SetReadDeadline(time.Time) error  { return nil }
func (p *spoolerPort) SetWriteDeadline(time.Time) error { return nil }
func (p *spoolerPort) Flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.jobs = append(p.jobs, p.buf)
		p.buf = nil
	}
	return nil
}
func (p *spoolerPort) Close() error { return p.Flush() }

func (p *spoolerPort) queue() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.jobs...)
}

// TestSpoolerPortIsOneWayUnasked ensures a transport that says it is
// one-way before any read (the Windows spooler) is taken as one-way without
// a question: a probe and a status poll write nothing, which through the
// spooler would each be a job of status queries in the Windows queue, and a
// profile that promises answers (epson-80, the default) does not make the
// printer "not answering" forever: there the spooler, not the printer, is
// silent. The ticket is then the queue's only job, byte for byte, confirmed
// "delivered", the spooler's word.
func TestSpoolerPortIsOneWayUnasked(t *testing.T) {
	for _, expect := range []bool{true, false} {
		port := &spoolerPort{}
		so := testSession
		so.ExpectAnswers = expect
		d := escpos.NewDevice(func(context.Context) (escpos.Conn, error) { return port, nil }, escpos.DeviceOptions{Session: so, IdleTimeout: -1})
		caps, err := d.Probe(ctxFor(t, 10*time.Second))
		if err != nil || caps.RealTime || caps.TransmitStatus || caps.ProcessID {
			t.Fatalf("ExpectAnswers %v: probe of the spooler: %+v %v, want one-way and no error", expect, caps, err)
		}
		if st, err := d.Status(ctxFor(t, 10*time.Second)); err != nil || st.State() != escpos.StateReady {
			t.Fatalf("ExpectAnswers %v: status through the spooler: %v %v, want ready and no error", expect, st, err)
		}
		job := ticketJob("SPOOLED")
		conf, err := d.Print(ctxFor(t, 10*time.Second), job, 1)
		if err != nil || conf != escpos.ConfirmDelivered {
			t.Fatalf("ExpectAnswers %v: print through the spooler: %v %v, want delivered", expect, conf, err)
		}
		d.Close()
		if q := port.queue(); len(q) != 1 || !bytes.Equal(q[0], job) {
			t.Errorf("ExpectAnswers %v: the queue got %d jobs %q, want one, the ticket %q", expect, len(q), q, job)
		}
	}
}
