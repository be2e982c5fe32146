//go:build !linux

package printertest

import "errors"

// AttachGadget is available on Linux only; elsewhere it returns an error.
func (p *Printer) AttachGadget(path string) (detach func(), err error) {
	return nil, errors.New("printertest: the USB printer gadget needs Linux")
}
