//go:build !linux

package vmtest

import (
	"errors"
	"os"
)

// fadviseDontNeed is Linux's; the VM is Linux.
func fadviseDontNeed(f *os.File) error {
	return errors.New("not on this system")
}
