//go:build !windows

package daemon

import (
	"errors"
	"syscall"
)

// addrInUse reports a listen refused because the port is taken.
func addrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }
