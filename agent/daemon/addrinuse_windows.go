package daemon

import (
	"errors"

	"golang.org/x/sys/windows"
)

// addrInUse reports a listen refused because the port is taken.
func addrInUse(err error) bool { return errors.Is(err, windows.WSAEADDRINUSE) }
