//go:build linux

package printertest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ioctlGadgetSetPrinterStatus is GADGET_SET_PRINTER_STATUS,
// _IOWR('g', 0x22, unsigned char) in linux/usb/g_printer.h. f_printer takes
// the status byte as the ioctl's argument itself, not through a pointer.
const ioctlGadgetSetPrinterStatus = 0xC0016722

// The USB printer-class port status bits the host reads with LPGETSTATUS.
const (
	gadgetPaperEmpty = 0x20
	gadgetSelected   = 0x10
	gadgetNotError   = 0x08
)

// gadgetStatus is the port status byte a real printer in faults f would
// report: 0x18 when ready, 0x38 at paper end, nFault low (0x10) with the
// cover open or a cutter error, not selected while offline.
func gadgetStatus(f Faults) byte {
	s := byte(gadgetSelected | gadgetNotError)
	if f.PaperOut {
		s |= gadgetPaperEmpty
	}
	if f.CoverOpen || f.CutterError {
		s &^= gadgetNotError
	}
	if f.Offline {
		s &^= gadgetSelected
	}
	return s
}

// AttachGadget makes the printer the device side of a Linux USB printer
// gadget (the f_printer function, normally /dev/g_printer0): the host's
// bytes are read from path and the answers written back to it, and the
// faults are mirrored into the gadget's port status, so a host's usblp
// LPGETSTATUS sees paper out and errors too. When the gadget goes away (its
// UDC unbound: a pulled cable) the device node disappears and the printer
// opens it again once it is back, as a printer sees a re-plugged cable.
// The line behaves like a serial one: offline is silent and a drop only
// loses held bytes. detach stops it and returns once the device file is
// closed; Close stops it too.
func (p *Printer) AttachGadget(path string) (detach func(), err error) {
	f, err := openGadget(path)
	if err != nil {
		return nil, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p.wg.Add(1)
	go func() {
		defer close(done)
		p.gadgetLoop(path, f, stop)
	}()
	return func() {
		once.Do(func() { close(stop) })
		<-done
	}, nil
}

func openGadget(path string) (*os.File, error) {
	// os.OpenFile registers the device with the runtime poller (f_printer
	// implements poll), so the write deadlines of writeLoop work.
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("printertest: open gadget %s: %w", path, err)
	}
	return f, nil
}

// gadgetFile is the gadget's device file as one connection; closed tells
// gadgetLoop that the reader gave up on it.
type gadgetFile struct {
	*os.File
	closed chan struct{}
	once   sync.Once
}

func (g *gadgetFile) Close() error {
	g.once.Do(func() { close(g.closed) })
	return g.File.Close()
}

// gadgetLoop serves one device file after another until the printer closes
// or stop is closed, and keeps the port status in step with the faults.
func (p *Printer) gadgetLoop(path string, f *os.File, stop chan struct{}) {
	defer p.wg.Done()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		g := &gadgetFile{File: f, closed: make(chan struct{})}
		p.addConn(g, g.SetWriteDeadline, true)
		last := -1
	serve:
		for {
			if s := int(gadgetStatus(p.Faults())); s != last {
				if err := control(f, func(fd int) error {
					_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlGadgetSetPrinterStatus, uintptr(s))
					if e != 0 {
						return e
					}
					return nil
				}); err == nil || !errors.Is(err, os.ErrClosed) {
					last = s
				}
			}
			select {
			case <-p.done:
				g.Close()
				return
			case <-stop:
				g.Close()
				return
			case <-g.closed:
				break serve
			case <-tick.C:
			}
		}
		// The reader failed: the cable is out. Wait for the node to return.
		for {
			var err error
			if f, err = openGadget(path); err == nil {
				break
			}
			select {
			case <-p.done:
				return
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}
}
