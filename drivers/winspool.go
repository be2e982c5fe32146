package drivers

import (
	"fmt"
	"sync"
	"time"
	"unicode/utf16"
	"unsafe"
)

// docInfo1 is DOC_INFO_1W, the document description StartDocPrinterW takes
// at level 1. It lives outside the Windows file so its layout is checked by
// tests on every OS.
type docInfo1 struct {
	DocName    *uint16
	OutputFile *uint16
	Datatype   *uint16
}

// docInfo1Size is sizeof(DOC_INFO_1W): three pointers, no padding.
const docInfo1Size = 3 * unsafe.Sizeof(uintptr(0))

// utf16Ptr returns s as a NUL-terminated UTF-16 string for Win32 calls.
func utf16Ptr(s string) *uint16 {
	u := append(utf16.Encode([]rune(s)), 0)
	return &u[0]
}

// spooler is the part of the Windows spooler API a RAW job needs. The
// Windows file implements it over winspool.drv; tests use a fake, so the job
// sequence is checked on every OS.
type spooler interface {
	open(queue string) (uintptr, error)
	startDoc(h uintptr, doc *docInfo1) error
	startPage(h uintptr) error
	write(h uintptr, p []byte) (int, error)
	endPage(h uintptr) error
	endDoc(h uintptr) error
	abort(h uintptr) error
	close(h uintptr) error
}

// winspoolConn prints through a Windows printer queue with the RAW datatype,
// so ESC/POS bytes pass through the driver untouched. The spooler returns no
// status, so Read fails with ErrOneWay and the best confirmation is
// "delivered". Writes collect in memory and Flush (or Close) hands them over
// as one document: one ticket is one job in the queue, which is what a
// person looking at the queue expects. Deadlines are accepted and ignored:
// spooler calls only write to the local spool and return promptly.
type winspoolConn struct {
	sp      spooler
	h       uintptr
	target  string
	queue   string
	docName string

	mu     sync.Mutex
	buf    []byte
	closed bool
}

var (
	_ Conn     = (*winspoolConn)(nil)
	_ Flusher  = (*winspoolConn)(nil)
	_ OneWayer = (*winspoolConn)(nil)
)

func newWinspoolConn(sp spooler, t Target, opts Options) (*winspoolConn, error) {
	h, err := sp.open(t.Queue)
	if err != nil {
		return nil, wrapErr("open", t.label(), t.Queue, err)
	}
	return &winspoolConn{sp: sp, h: h, target: t.label(), queue: t.Queue, docName: opts.docName()}, nil
}

func (c *winspoolConn) Read(p []byte) (int, error) {
	return 0, wrapErr("read", c.target, c.queue, ErrOneWay)
}

func (c *winspoolConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, wrapErr("write", c.target, c.queue, errClosedConn)
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// OneWay is always true: the spooler gives nothing back.
func (c *winspoolConn) OneWay() bool { return true }

func (c *winspoolConn) SetReadDeadline(time.Time) error  { return nil }
func (c *winspoolConn) SetWriteDeadline(time.Time) error { return nil }

// Flush sends what was written since the last Flush as one RAW document.
// The bytes are dropped whether or not the job succeeds, so a failed job is
// never silently printed again by a later Flush or Close; the caller decides
// about retrying.
func (c *winspoolConn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return wrapErr("flush", c.target, c.queue, errClosedConn)
	}
	return c.flushLocked()
}

func (c *winspoolConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	data := c.buf
	c.buf = nil
	if err := c.job(data); err != nil {
		return wrapErr("flush", c.target, c.queue, err)
	}
	return nil
}

func (c *winspoolConn) job(data []byte) error {
	doc := docInfo1{DocName: utf16Ptr(c.docName), Datatype: utf16Ptr("RAW")}
	if err := c.sp.startDoc(c.h, &doc); err != nil {
		return fmt.Errorf("start document: %w", err)
	}
	// A job that failed half way is aborted so the printer never gets a
	// truncated ticket.
	fail := func(what string, err error) error {
		_ = c.sp.abort(c.h)
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := c.sp.startPage(c.h); err != nil {
		return fail("start page", err)
	}
	for len(data) > 0 {
		n, err := c.sp.write(c.h, data)
		if err != nil {
			return fail("write", err)
		}
		if n <= 0 {
			return fail("write", fmt.Errorf("spooler took 0 of %d bytes", len(data)))
		}
		data = data[n:]
	}
	if err := c.sp.endPage(c.h); err != nil {
		return fail("end page", err)
	}
	if err := c.sp.endDoc(c.h); err != nil {
		return fmt.Errorf("end document: %w", err)
	}
	return nil
}

// Close flushes pending bytes as a last job and closes the queue handle.
func (c *winspoolConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return wrapErr("close", c.target, c.queue, errClosedConn)
	}
	c.closed = true
	ferr := c.flushLocked()
	cerr := c.sp.close(c.h)
	if ferr != nil {
		return ferr
	}
	return wrapErr("close", c.target, c.queue, cerr)
}
