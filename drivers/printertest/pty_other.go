//go:build !linux

package printertest

import "errors"

// OpenPTY is available on Linux only; elsewhere it returns an error.
func (p *Printer) OpenPTY() (string, error) {
	return "", errors.New("printertest: pty emulation needs Linux")
}
