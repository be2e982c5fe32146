//go:build !windows

package drivers

import (
	"context"
)

func openWinspool(ctx context.Context, t Target, opts Options) (Conn, error) {
	return nil, &Error{Op: "open", Target: t.label(), Err: ErrUnsupported,
		Hint: "winspool:// queues exist only on Windows; on this system use usb://, serial:// or tcp://"}
}

func discoverWinspool() ([]Found, error) { return nil, nil }
