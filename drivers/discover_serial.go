//go:build linux || windows

package drivers

import (
	"fmt"
	"strconv"

	"go.bug.st/serial/enumerator"
)

// discoverSerial uses go.bug.st/serial's enumerator, which needs cgo on
// macOS; printgate ships for Linux and Windows only.
func discoverSerial() ([]Found, error) {
	ports, err := enumerator.GetDetailedPortsList()
	if err != nil {
		return nil, fmt.Errorf("list serial ports: %w", err)
	}
	out := make([]Found, 0, len(ports))
	for _, p := range ports {
		if isConsole(p.Name) {
			continue
		}
		f := Found{Kind: SchemeSerial, Name: p.Name, URL: "serial://" + p.Name}
		if p.IsUSB {
			f.VendorID = parseHex16(p.VID)
			f.ProductID = parseHex16(p.PID)
			f.SerialNumber = p.SerialNumber
			f.Product = p.Product
		}
		out = append(out, f)
	}
	return out, nil
}

func parseHex16(s string) uint16 {
	v, err := strconv.ParseUint(s, 16, 16)
	if err != nil {
		return 0
	}
	return uint16(v)
}
