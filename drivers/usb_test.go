package drivers

import (
	"reflect"
	"testing"
)

// TestParseDeviceID ensures short and long IEEE 1284 keys both fill the
// fields and the command set is split.
func TestParseDeviceID(t *testing.T) {
	id := ParseDeviceID("MFG:EPSON;CMD:ESC/POS, EPSON-TM ;MDL:TM-T20II;CLS:PRINTER;DES:EPSON TM-T20II Receipt;junk;:x;\x00\x00")
	if id.Manufacturer != "EPSON" || id.Model != "TM-T20II" || id.Class != "PRINTER" || id.Description != "EPSON TM-T20II Receipt" {
		t.Errorf("id = %+v", id)
	}
	if !reflect.DeepEqual(id.CommandSet, []string{"ESC/POS", "EPSON-TM"}) {
		t.Errorf("CommandSet = %q", id.CommandSet)
	}
	if id.String() != "EPSON TM-T20II" {
		t.Errorf("String = %q", id.String())
	}
	long := ParseDeviceID("MANUFACTURER:Xprinter;MODEL:XP-58;COMMAND SET:ESC/POS;SERIALNUMBER:123")
	if long.Manufacturer != "Xprinter" || long.Model != "XP-58" || long.CommandSet[0] != "ESC/POS" || long.SerialNumber != "123" {
		t.Errorf("long keys = %+v", long)
	}
	if ParseDeviceID("DES:Thermal printer;").String() != "Thermal printer" {
		t.Error("String does not fall back to the description")
	}
}

// TestParseDeviceIDReply ensures the 2-byte length prefix is honoured
// big-endian, tolerated little-endian, and ignored when nonsense.
func TestParseDeviceIDReply(t *testing.T) {
	s := "MFG:EPSON;MDL:TM-T88V;"
	buf := make([]byte, 1024)
	copy(buf[2:], s+"TRAILING GARBAGE")
	buf[0], buf[1] = 0, byte(len(s)+2)
	id, err := parseDeviceIDReply(buf)
	if err != nil || id.Raw != s {
		t.Errorf("big-endian: %q, %v", id.Raw, err)
	}
	buf[0], buf[1] = byte(len(s)+2), 0
	if id, err := parseDeviceIDReply(buf[:len(s)+2]); err != nil || id.Raw != s {
		t.Errorf("little-endian: %q, %v", id.Raw, err)
	}
	copy(buf, "\xff\xff"+s)
	buf[2+len(s)] = 0
	if id, err := parseDeviceIDReply(buf); err != nil || id.Model != "TM-T88V" {
		t.Errorf("bad length: %+v, %v", id, err)
	}
	if _, err := parseDeviceIDReply([]byte{0, 2}); err == nil {
		t.Error("empty id accepted")
	}
	if _, err := parseDeviceIDReply([]byte{0}); err == nil {
		t.Error("short reply accepted")
	}
}

// TestLPStatus ensures the port status bits decode as usblp documents them.
func TestLPStatus(t *testing.T) {
	tests := []struct {
		s                                LPStatus
		paperOut, selected, fault, ready bool
	}{
		{0x18, false, true, false, true},
		{0x38, true, true, false, false},
		{0x10, false, true, true, false},
		{0x08, false, false, false, false},
	}
	for _, tt := range tests {
		if tt.s.PaperOut() != tt.paperOut || tt.s.Selected() != tt.selected || tt.s.Fault() != tt.fault || tt.s.Ready() != tt.ready {
			t.Errorf("%v: paperOut %v selected %v fault %v ready %v", tt.s, tt.s.PaperOut(), tt.s.Selected(), tt.s.Fault(), tt.s.Ready())
		}
	}
	if got := LPStatus(0x38).String(); got != "selected, paper out (0x38)" {
		t.Errorf("String = %q", got)
	}
}

// TestParseUSBPrintPath ensures VID, PID and instance come out of Windows
// USBPRINT interface paths, composite devices included.
func TestParseUSBPrintPath(t *testing.T) {
	tests := []struct {
		path     string
		vid, pid uint16
		inst     string
		ok       bool
	}{
		{`\\?\USB#VID_04B8&PID_0202#X5A1000001#{28d78fad-5a12-11d1-ae5b-0000f803a8c2}`, 0x04b8, 0x0202, "X5A1000001", true},
		{`\\?\usb#vid_0416&pid_5011&mi_00#7&1a2b3c4d&0&0000#{28d78fad-5a12-11d1-ae5b-0000f803a8c2}`, 0x0416, 0x5011, "7&1a2b3c4d&0&0000", true},
		{`\\?\ROOT#PRINTER#0000#{28d78fad-5a12-11d1-ae5b-0000f803a8c2}`, 0, 0, "", false},
	}
	for _, tt := range tests {
		v, p, inst, ok := parseUSBPrintPath(tt.path)
		if v != tt.vid || p != tt.pid || inst != tt.inst || ok != tt.ok {
			t.Errorf("%s: %04x:%04x %q %v", tt.path, v, p, inst, ok)
		}
	}
}
