package drivers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unsafe"
)

// TestDocInfo1Layout ensures docInfo1 matches DOC_INFO_1W: three pointers
// in the documented order, no padding.
func TestDocInfo1Layout(t *testing.T) {
	ptr := unsafe.Sizeof(uintptr(0))
	var d docInfo1
	if unsafe.Sizeof(d) != docInfo1Size || docInfo1Size != 3*ptr {
		t.Errorf("size %d, want %d", unsafe.Sizeof(d), 3*ptr)
	}
	if unsafe.Offsetof(d.DocName) != 0 || unsafe.Offsetof(d.OutputFile) != ptr || unsafe.Offsetof(d.Datatype) != 2*ptr {
		t.Errorf("offsets %d %d %d", unsafe.Offsetof(d.DocName), unsafe.Offsetof(d.OutputFile), unsafe.Offsetof(d.Datatype))
	}
}

func fromUTF16Ptr(p *uint16) string {
	if p == nil {
		return ""
	}
	var u []uint16
	for q := unsafe.Pointer(p); *(*uint16)(q) != 0; q = unsafe.Add(q, 2) {
		u = append(u, *(*uint16)(q))
	}
	return string(utf16.Decode(u))
}

// fakeSpooler records the spooler calls of winspoolConn.
type fakeSpooler struct {
	calls   []string
	docs    [][]byte
	cur     []byte
	maxW    int    // bytes WritePrinter takes per call
	failAt  string // call that fails
	openErr error
}

func (f *fakeSpooler) fail(call string) error {
	f.calls = append(f.calls, call)
	if f.failAt == call {
		return fmt.Errorf("%s failed", call)
	}
	return nil
}

func (f *fakeSpooler) open(q string) (uintptr, error) {
	f.calls = append(f.calls, "open "+q)
	return 7, f.openErr
}

func (f *fakeSpooler) startDoc(h uintptr, d *docInfo1) error {
	f.cur = nil
	return f.fail(fmt.Sprintf("startDoc %d %s %s %q", h, fromUTF16Ptr(d.DocName), fromUTF16Ptr(d.Datatype), fromUTF16Ptr(d.OutputFile)))
}
func (f *fakeSpooler) startPage(uintptr) error { return f.fail("startPage") }
func (f *fakeSpooler) write(h uintptr, p []byte) (int, error) {
	if err := f.fail("write"); err != nil {
		return 0, err
	}
	n := min(len(p), f.maxW)
	f.cur = append(f.cur, p[:n]...)
	return n, nil
}
func (f *fakeSpooler) endPage(uintptr) error { return f.fail("endPage") }
func (f *fakeSpooler) endDoc(uintptr) error {
	if err := f.fail("endDoc"); err != nil {
		return err
	}
	f.docs = append(f.docs, f.cur)
	return nil
}
func (f *fakeSpooler) abort(uintptr) error { f.cur = nil; return f.fail("abort") }
func (f *fakeSpooler) close(uintptr) error { return f.fail("close") }

func openFakeWinspool(t *testing.T, sp *fakeSpooler) *winspoolConn {
	t.Helper()
	tg, err := ParseURL("winspool://EPSON TM-T20II")
	if err != nil {
		t.Fatal(err)
	}
	c, err := newWinspoolConn(sp, tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWinspoolJobs ensures each Flush is one RAW document with the bytes
// written since the last one, WritePrinter's partial writes are continued,
// Close flushes the rest, and Read says one-way.
func TestWinspoolJobs(t *testing.T) {
	sp := &fakeSpooler{maxW: 4}
	c := openFakeWinspool(t, sp)
	c.Write([]byte("\x1b@first "))
	c.Write([]byte("ticket\x1dV\x00"))
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil { // nothing new: no empty job
		t.Fatal(err)
	}
	c.Write([]byte("second"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if len(sp.docs) != 2 || string(sp.docs[0]) != "\x1b@first ticket\x1dV\x00" || string(sp.docs[1]) != "second" {
		t.Fatalf("docs %q", sp.docs)
	}
	if sp.calls[0] != "open EPSON TM-T20II" || sp.calls[1] != `startDoc 7 printgate RAW ""` || sp.calls[2] != "startPage" || sp.calls[len(sp.calls)-1] != "close" {
		t.Errorf("calls %q", sp.calls)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, ErrOneWay) {
		t.Errorf("Read = %v, want ErrOneWay", err)
	}
	if !c.OneWay() {
		t.Error("OneWay = false")
	}
	if _, err := c.Write([]byte("x")); err == nil {
		t.Error("write after close succeeded")
	}
}

// TestWinspoolFailedJobAborted ensures a job failing half way is aborted
// (no truncated ticket printed) and its bytes are not sent again by Close.
func TestWinspoolFailedJobAborted(t *testing.T) {
	sp := &fakeSpooler{maxW: 100, failAt: "write"}
	c := openFakeWinspool(t, sp)
	c.Write([]byte("ticket"))
	err := c.Flush()
	var pe *Error
	if !errors.As(err, &pe) || pe.Op != "flush" || !strings.Contains(err.Error(), "write failed") {
		t.Fatalf("Flush = %v", err)
	}
	if sp.calls[len(sp.calls)-1] != "abort" {
		t.Errorf("calls %q, want abort last", sp.calls)
	}
	sp.failAt = ""
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if len(sp.docs) != 0 {
		t.Errorf("failed job printed on close: %q", sp.docs)
	}
}

// TestWinspoolOpenError ensures a missing queue surfaces from Open.
func TestWinspoolOpenError(t *testing.T) {
	tg, _ := ParseURL("winspool://nope")
	_, err := newWinspoolConn(&fakeSpooler{openErr: errors.New("no such queue")}, tg, Options{})
	if err == nil || !strings.Contains(err.Error(), "open winspool://nope") {
		t.Fatalf("err = %v", err)
	}
}

// TestWinspoolURLRoundTrip ensures the URL discovery gives a Windows
// printer queue parses back to that queue, a name with '%' or spaces too.
func TestWinspoolURLRoundTrip(t *testing.T) {
	for _, name := range []string{"EPSON TM-T20II Receipt", "Bar & Grill 80%", "厨房"} {
		tg, err := ParseURL(winspoolURL(name))
		if err != nil || tg.Scheme != SchemeWinspool || tg.Queue != name {
			t.Errorf("ParseURL(%q) = %+v %v, want queue %q", winspoolURL(name), tg, err, name)
		}
	}
}
