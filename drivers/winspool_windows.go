package drivers

import (
	"context"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// x/sys/windows has no spooler wrappers, so the calls go through the DLL.
var (
	modWinspool          = windows.NewLazySystemDLL("winspool.drv")
	procOpenPrinterW     = modWinspool.NewProc("OpenPrinterW")
	procClosePrinter     = modWinspool.NewProc("ClosePrinter")
	procStartDocPrinterW = modWinspool.NewProc("StartDocPrinterW")
	procEndDocPrinter    = modWinspool.NewProc("EndDocPrinter")
	procStartPagePrinter = modWinspool.NewProc("StartPagePrinter")
	procEndPagePrinter   = modWinspool.NewProc("EndPagePrinter")
	procWritePrinter     = modWinspool.NewProc("WritePrinter")
	procAbortPrinter     = modWinspool.NewProc("AbortPrinter")
	procEnumPrintersW    = modWinspool.NewProc("EnumPrintersW")
)

// winspoolAPI implements spooler with winspool.drv.
type winspoolAPI struct{}

// lastErr returns the error of a failed BOOL call, which LazyProc.Call
// reports from GetLastError; a zero errno still means failure.
func lastErr(err error) error {
	if errno, ok := err.(windows.Errno); ok && errno == 0 {
		return windows.ERROR_GEN_FAILURE
	}
	return err
}

func (winspoolAPI) open(queue string) (uintptr, error) {
	name, err := windows.UTF16PtrFromString(queue)
	if err != nil {
		return 0, err
	}
	var h uintptr
	r, _, e := procOpenPrinterW.Call(uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&h)), 0)
	if r == 0 {
		return 0, lastErr(e)
	}
	return h, nil
}

func (winspoolAPI) startDoc(h uintptr, doc *docInfo1) error {
	r, _, e := procStartDocPrinterW.Call(h, 1, uintptr(unsafe.Pointer(doc)))
	if r == 0 {
		return lastErr(e)
	}
	return nil
}

func boolCall(p *windows.LazyProc, h uintptr) error {
	r, _, e := p.Call(h)
	if r == 0 {
		return lastErr(e)
	}
	return nil
}

func (winspoolAPI) startPage(h uintptr) error { return boolCall(procStartPagePrinter, h) }
func (winspoolAPI) endPage(h uintptr) error   { return boolCall(procEndPagePrinter, h) }
func (winspoolAPI) endDoc(h uintptr) error    { return boolCall(procEndDocPrinter, h) }
func (winspoolAPI) abort(h uintptr) error     { return boolCall(procAbortPrinter, h) }
func (winspoolAPI) close(h uintptr) error     { return boolCall(procClosePrinter, h) }

func (winspoolAPI) write(h uintptr, p []byte) (int, error) {
	var n uint32
	r, _, e := procWritePrinter.Call(h, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(unsafe.Pointer(&n)))
	if r == 0 {
		return int(n), lastErr(e)
	}
	return int(n), nil
}

func openWinspool(ctx context.Context, t Target, opts Options) (Conn, error) {
	return newWinspoolConn(winspoolAPI{}, t, opts)
}

// printerInfo2 is PRINTER_INFO_2W, what EnumPrintersW returns at level 2.
type printerInfo2 struct {
	ServerName, PrinterName, ShareName, PortName, DriverName *uint16
	Comment, Location                                        *uint16
	DevMode                                                  uintptr
	SepFile, PrintProcessor, Datatype, Parameters            *uint16
	SecurityDescriptor                                       uintptr
	Attributes, Priority, DefaultPriority                    uint32
	StartTime, UntilTime, Status, Jobs, AveragePPM           uint32
}

// printerEnumLocal is PRINTER_ENUM_LOCAL: the PC's own queues only, so a
// listing never waits on a print server (a receipt printer is local).
const printerEnumLocal = 0x2

func discoverWinspool() ([]Found, error) {
	var needed, returned uint32
	// The first call only sizes the buffer; the list may grow between the
	// calls, hence the few tries.
	buf := make([]byte, 4096)
	for range 4 {
		r, _, e := procEnumPrintersW.Call(printerEnumLocal, 0, 2, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
			uintptr(unsafe.Pointer(&needed)), uintptr(unsafe.Pointer(&returned)))
		if r != 0 {
			return foundPrinters(unsafe.Slice((*printerInfo2)(unsafe.Pointer(&buf[0])), returned)), nil
		}
		err := lastErr(e)
		if err == windows.RPC_S_SERVER_UNAVAILABLE {
			return nil, fmt.Errorf("listing the Windows printer queues: the Print Spooler service is not running (start it in services.msc to print to winspool:// queues): %w", err)
		}
		if err != windows.ERROR_INSUFFICIENT_BUFFER {
			return nil, fmt.Errorf("listing the Windows printer queues (EnumPrintersW): %w", err)
		}
		buf = make([]byte, max(int(needed), 2*len(buf)))
	}
	return nil, fmt.Errorf("listing the Windows printer queues (EnumPrintersW): the list kept growing; try again")
}

func foundPrinters(list []printerInfo2) []Found {
	out := make([]Found, 0, len(list))
	for _, p := range list {
		name := windows.UTF16PtrToString(p.PrinterName)
		if name == "" {
			continue
		}
		out = append(out, Found{Kind: SchemeWinspool, URL: winspoolURL(name),
			Name: windows.UTF16PtrToString(p.PortName), Model: windows.UTF16PtrToString(p.DriverName)})
	}
	return out
}
