package drivers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrNoStatus is returned by LPStatus and DeviceID on a device that does
// not implement the printer-class requests (a stand-in device, some clones).
var ErrNoStatus = errors.New("the device does not report printer port status")

// LPStatus is the USB printer-class port status byte (GET_PORT_STATUS), as
// returned by the Linux LPGETSTATUS ioctl and Windows
// IOCTL_USBPRINT_GET_LPT_STATUS. Cheap printers often report a fixed value,
// so ESC/POS real-time status (DLE EOT) stays the better source; this is for
// one-way interfaces, where it is the only one.
type LPStatus uint8

// Port status bits (IEEE 1284 status lines as USB reports them).
const (
	LPPaperOut LPStatus = 0x20 // paper empty
	LPSelected LPStatus = 0x10 // printer selected (online)
	LPNoError  LPStatus = 0x08 // the nFault line is high: no error
)

// PaperOut reports the paper-empty bit.
func (s LPStatus) PaperOut() bool { return s&LPPaperOut != 0 }

// Selected reports whether the printer says it is online.
func (s LPStatus) Selected() bool { return s&LPSelected != 0 }

// Fault reports whether the printer signals an error (nFault low).
func (s LPStatus) Fault() bool { return s&LPNoError == 0 }

// Ready reports whether the printer is online, has paper and no error.
func (s LPStatus) Ready() bool { return s.Selected() && !s.PaperOut() && !s.Fault() }

// String lists the bits for logs, such as "selected, paper out (0x38)".
func (s LPStatus) String() string {
	var parts []string
	if s.Selected() {
		parts = append(parts, "selected")
	} else {
		parts = append(parts, "not selected")
	}
	if s.PaperOut() {
		parts = append(parts, "paper out")
	}
	if s.Fault() {
		parts = append(parts, "error")
	}
	return fmt.Sprintf("%s (0x%02x)", strings.Join(parts, ", "), uint8(s))
}

// LPStatusReader is implemented by USB printer connections (Linux usblp,
// Windows USBPRINT).
type LPStatusReader interface {
	LPStatus() (LPStatus, error)
}

// DeviceIDReader is implemented by USB printer connections that can ask the
// printer for its IEEE 1284 device id.
type DeviceIDReader interface {
	DeviceID() (DeviceID, error)
}

// DeviceID is a parsed IEEE 1284 device id, the "MFG:EPSON;MDL:TM-T20II;
// CMD:ESC/POS;" string a USB printer reports. Discovery shows it so a user
// can tell two printers apart, and CommandSet tells ESC/POS printers from
// label or laser printers.
type DeviceID struct {
	Manufacturer string   // MFG or MANUFACTURER
	Model        string   // MDL or MODEL
	CommandSet   []string // CMD or COMMAND SET, split on commas
	Class        string   // CLS or CLASS
	Description  string   // DES or DESCRIPTION
	SerialNumber string   // SN or SERIALNUMBER, rarely present
	// Fields holds every key (upper-cased) and value as reported.
	Fields map[string]string
	// Raw is the id string without the length prefix.
	Raw string
}

// ParseDeviceID parses an IEEE 1284 device id string (no length prefix).
// Unknown keys land in Fields only; malformed pairs are skipped rather than
// failing, as printers in the wild do not all follow the standard.
func ParseDeviceID(s string) DeviceID {
	s = strings.TrimRight(s, "\x00 \r\n")
	id := DeviceID{Fields: map[string]string{}, Raw: s}
	for _, pair := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(pair, ":")
		if !ok {
			continue
		}
		k = strings.ToUpper(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if k == "" {
			continue
		}
		id.Fields[k] = v
		switch k {
		case "MFG", "MANUFACTURER":
			id.Manufacturer = v
		case "MDL", "MODEL":
			id.Model = v
		case "CMD", "COMMAND SET":
			id.CommandSet = nil
			for _, c := range strings.Split(v, ",") {
				if c = strings.TrimSpace(c); c != "" {
					id.CommandSet = append(id.CommandSet, c)
				}
			}
		case "CLS", "CLASS":
			id.Class = v
		case "DES", "DESCRIPTION":
			id.Description = v
		case "SN", "SERIALNUMBER", "SERIAL NUMBER":
			id.SerialNumber = v
		}
	}
	return id
}

// String returns "Manufacturer Model", or the description, for display.
func (d DeviceID) String() string {
	s := strings.TrimSpace(d.Manufacturer + " " + d.Model)
	if s == "" {
		s = d.Description
	}
	return s
}

// parseDeviceIDReply parses the answer of the GET_DEVICE_ID request: a
// 2-byte big-endian length that counts itself, then the id string. Some
// printers get the byte order wrong, so a length that does not fit is tried
// little-endian, and failing that the string runs to the first NUL.
func parseDeviceIDReply(b []byte) (DeviceID, error) {
	if len(b) < 2 {
		return DeviceID{}, fmt.Errorf("device id reply of %d bytes is too short", len(b))
	}
	n := int(binary.BigEndian.Uint16(b))
	if n < 2 || n > len(b) {
		n = int(binary.LittleEndian.Uint16(b))
	}
	if n < 2 || n > len(b) {
		n = len(b)
		for i := 2; i < len(b); i++ {
			if b[i] == 0 {
				n = i
				break
			}
		}
	}
	if n <= 2 {
		return DeviceID{}, fmt.Errorf("the printer reported an empty device id")
	}
	return ParseDeviceID(string(b[2:n])), nil
}

// usbPrintPath matches the vendor, product and instance parts of a Windows
// USBPRINT interface path such as
// \\?\USB#VID_04B8&PID_0202#5&2b1d1c6&0&1#{28d78fad-5a12-11d1-ae5b-0000f803a8c2}.
var usbPrintPath = regexp.MustCompile(`(?i)#VID_([0-9A-F]{4})&PID_([0-9A-F]{4})(?:&[^#]*)?#([^#]*)#`)

// parseUSBPrintPath extracts VID, PID and the instance part (the serial
// number when the printer has one) from a USBPRINT device interface path.
func parseUSBPrintPath(p string) (vid, pid uint16, instance string, ok bool) {
	m := usbPrintPath.FindStringSubmatch(p)
	if m == nil {
		return 0, 0, "", false
	}
	v, _ := strconv.ParseUint(m[1], 16, 16)
	d, _ := strconv.ParseUint(m[2], 16, 16)
	return uint16(v), uint16(d), m[3], true
}
