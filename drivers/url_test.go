package drivers

import (
	"strings"
	"testing"
)

// TestParseURLGood ensures every URL form of docs/PROTOCOL.md §2 parses to
// the right fields, with defaults filled in.
func TestParseURLGood(t *testing.T) {
	tests := []struct {
		url  string
		want Target
	}{
		{"tcp://192.168.1.50:9100", Target{Scheme: SchemeTCP, Addr: "192.168.1.50:9100"}},
		{"tcp://192.168.1.50", Target{Scheme: SchemeTCP, Addr: "192.168.1.50:9100"}},
		{"tcp://printer.local:9101/", Target{Scheme: SchemeTCP, Addr: "printer.local:9101"}},
		{"TCP://[fe80::1]:9100", Target{Scheme: SchemeTCP, Addr: "[fe80::1]:9100"}},
		{"tcp://[fe80::1]", Target{Scheme: SchemeTCP, Addr: "[fe80::1]:9100"}},
		{"serial:///dev/ttyUSB0", Target{Scheme: SchemeSerial, Path: "/dev/ttyUSB0", Line: DefaultLineSettings}},
		{"serial:///dev/ttyUSB0?baud=19200&flow=rtscts", Target{Scheme: SchemeSerial, Path: "/dev/ttyUSB0",
			Line: LineSettings{Baud: 19200, DataBits: 8, Parity: ParityNone, StopBits: 1, Flow: FlowRTSCTS}}},
		{"serial:///dev/ttyS0?baud=115200&parity=even&data=7&stop=2&flow=XONXOFF", Target{Scheme: SchemeSerial, Path: "/dev/ttyS0",
			Line: LineSettings{Baud: 115200, DataBits: 7, Parity: ParityEven, StopBits: 2, Flow: FlowXONXOFF}}},
		{"serial://COM3?flow=dsrdtr", Target{Scheme: SchemeSerial, Path: "COM3",
			Line: LineSettings{Baud: 9600, DataBits: 8, Parity: ParityNone, StopBits: 1, Flow: FlowDSRDTR}}},
		{"serial://com12", Target{Scheme: SchemeSerial, Path: "COM12", Line: DefaultLineSettings}},
		{"usb:///dev/usb/lp0", Target{Scheme: SchemeUSB, Path: "/dev/usb/lp0"}},
		{"usb://04b8:0202", Target{Scheme: SchemeUSB, VendorID: 0x04b8, ProductID: 0x0202}},
		{"usb://04B8:0E28?serial=X5A1", Target{Scheme: SchemeUSB, VendorID: 0x04b8, ProductID: 0x0e28, SerialNumber: "X5A1"}},
		{"winspool://EPSON TM-T20II", Target{Scheme: SchemeWinspool, Queue: "EPSON TM-T20II"}},
		{"winspool://Kitchen%20Printer", Target{Scheme: SchemeWinspool, Queue: "Kitchen Printer"}},
		{`winspool://\\server\kitchen`, Target{Scheme: SchemeWinspool, Queue: `\\server\kitchen`}},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.url)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.url, err)
			continue
		}
		tt.want.Raw = tt.url
		if got != tt.want {
			t.Errorf("ParseURL(%q) = %+v, want %+v", tt.url, got, tt.want)
		}
		// The canonical form must mean the same printer.
		again, err := ParseURL(got.String())
		if err != nil {
			t.Errorf("ParseURL(%q) of canonical form of %q: %v", got.String(), tt.url, err)
			continue
		}
		again.Raw = got.Raw
		if again != got {
			t.Errorf("canonical form %q of %q parses to %+v, want %+v", got.String(), tt.url, again, got)
		}
	}
}

// TestParseURLBad ensures config mistakes are rejected with a message that
// names the problem and shows the right form.
func TestParseURLBad(t *testing.T) {
	tests := []struct{ url, want string }{
		{"192.168.1.50:9100", "has no scheme"},
		{"http://192.168.1.50", `unknown scheme "http"`},
		{"lpt://1", `unknown scheme "lpt"`},
		{"tcp://", "host missing"},
		{"tcp://:9100", "host missing"},
		{"tcp://192.168.1.50:", "port missing after ':'"},
		{"tcp://192.168.1.50:0", `bad port "0"`},
		{"tcp://192.168.1.50:70000", `bad port "70000"`},
		{"tcp://192.168.1.50:print", `bad port "print"`},
		{"tcp://192.168.1.50:9100/queue", "tcp urls have no path"},
		{"tcp://192.168.1.50:9100?x=1", "tcp urls take no parameters"},
		{"tcp://fe80::1", "IPv6 addresses in brackets"},
		{"serial://", "serial device missing"},
		{"serial://dev/ttyUSB0", "three slashes"},
		{"serial:///dev/ttyUSB0?baud=19201", `bad baud "19201"`},
		{"serial:///dev/ttyUSB0?baud=fast", `bad baud "fast"`},
		{"serial:///dev/ttyUSB0?flow=hardware", `unknown flow mode "hardware": want rtscts, dsrdtr, xonxoff or none`},
		{"serial:///dev/ttyUSB0?parity=mark", `bad parity "mark"`},
		{"serial:///dev/ttyUSB0?data=9", `bad data bits "9"`},
		{"serial:///dev/ttyUSB0?stop=3", `bad stop bits "3"`},
		{"serial:///dev/ttyUSB0?speed=9600", `unknown serial parameter "speed"`},
		{"usb://", "usb device missing"},
		{"usb://04b8", `bad VID:PID "04b8"`},
		{"usb://4b8:202", `bad VID:PID "4b8:202"`},
		{"usb://04b8:02g2", `bad VID:PID "04b8:02g2"`},
		{"usb://04b8:0202?port=2", `unknown usb parameter "port"`},
		{"usb:///dev/usb/lp0?serial=1", "usb device paths take no parameters"},
		{"winspool://", "queue name missing"},
		{"winspool://%zz", "bad queue name"},
	}
	for _, tt := range tests {
		_, err := ParseURL(tt.url)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded, want error containing %q", tt.url, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseURL(%q) error %q, want it to contain %q", tt.url, err, tt.want)
		}
		if !strings.Contains(err.Error(), tt.url) {
			t.Errorf("ParseURL(%q) error %q does not quote the url", tt.url, err)
		}
	}
}
