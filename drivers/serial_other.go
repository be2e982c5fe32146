//go:build !linux && !windows

package drivers

import "context"

func openSerial(ctx context.Context, t Target, opts Options) (Conn, error) {
	return nil, wrapErr("open", t.label(), t.Path, ErrUnsupported)
}
