//go:build !linux && !windows

package drivers

func discoverUSB() ([]Found, error) { return nil, nil }

func discoverSerial() ([]Found, error) { return nil, ErrUnsupported }
