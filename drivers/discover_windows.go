package drivers

import "fmt"

func discoverUSB() ([]Found, error) {
	paths, err := usbPrintInterfaces()
	if err != nil {
		return nil, err
	}
	out := make([]Found, 0, len(paths))
	for _, p := range paths {
		f := Found{Kind: SchemeUSB, Name: p}
		vid, pid, inst, ok := parseUSBPrintPath(p)
		if ok {
			f.VendorID, f.ProductID = vid, pid
			f.URL = fmt.Sprintf("usb://%04x:%04x", vid, pid)
			// Instance ids of devices without a serial number contain '&'.
			if inst != "" && !containsAmp(inst) {
				f.SerialNumber = inst
			}
		}
		// Asking the printer for its id needs a brief open; a printer in
		// use by someone else just shows without a model.
		if file, err := openUSBPrintPath(p); err == nil {
			c := &usbConn{f: file, path: p, target: p}
			if id, err := c.DeviceID(); err == nil {
				f.Model = id.String()
			}
			c.Close()
		}
		out = append(out, f)
	}
	return out, nil
}

func containsAmp(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '&' {
			return true
		}
	}
	return false
}

// isConsole is Linux's: a Windows COM port is never the system console.
func isConsole(string) bool { return false }
