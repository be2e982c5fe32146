package drivers

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Scheme names the transport a printer URL selects.
type Scheme string

// The printer URL schemes of the config (docs/PROTOCOL.md §2).
const (
	SchemeTCP      Scheme = "tcp"      // tcp://host[:port], raw printing port
	SchemeSerial   Scheme = "serial"   // serial:///dev/ttyUSB0?baud=19200 or serial://COM3
	SchemeUSB      Scheme = "usb"      // usb:///dev/usb/lp0 or usb://04b8:0202
	SchemeWinspool Scheme = "winspool" // winspool://QUEUE NAME
)

// DefaultTCPPort is the raw printing port ("JetDirect", 9100) that nearly
// every network receipt printer listens on; tcp:// URLs without a port use it.
const DefaultTCPPort = 9100

// Flow is the flow control of a serial line. Receipt printers are slower than
// any serial line above 9600 baud, so without the right mode a long job
// overruns the printer's buffer and prints garbage or nothing.
type Flow string

// Serial flow control modes, as written in the flow= URL parameter.
const (
	FlowNone    Flow = "none"
	FlowRTSCTS  Flow = "rtscts"
	FlowDSRDTR  Flow = "dsrdtr"
	FlowXONXOFF Flow = "xonxoff"
)

// Parity is the parity bit setting of a serial line.
type Parity string

// Serial parity settings, as written in the parity= URL parameter.
const (
	ParityNone Parity = "none"
	ParityEven Parity = "even"
	ParityOdd  Parity = "odd"
)

// LineSettings are the serial line parameters of a serial:// URL. The
// defaults (9600 8N1, no flow control) match the DIP-switch defaults of most
// receipt printers.
type LineSettings struct {
	Baud     int
	DataBits int // 5..8
	Parity   Parity
	StopBits int // 1 or 2
	Flow     Flow
}

// DefaultLineSettings is what a serial:// URL without parameters means.
var DefaultLineSettings = LineSettings{Baud: 9600, DataBits: 8, Parity: ParityNone, StopBits: 1, Flow: FlowNone}

// standardBauds are the rates both Linux termios (without BOTHER) and every
// USB serial adapter support; a rate outside the list is almost always a typo.
var standardBauds = []int{1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600}

// Target is a parsed, validated printer URL. Exactly the fields of its Scheme
// are set.
type Target struct {
	Scheme Scheme
	// Raw is the URL as written in the config, used in error messages so the
	// user recognises the printer.
	Raw string

	// Addr is host:port for tcp.
	Addr string
	// Path is the device for serial (/dev/ttyUSB0, COM3) and for usb given by
	// path (/dev/usb/lp0).
	Path string
	// Line holds the serial line parameters.
	Line LineSettings
	// VendorID and ProductID select a usb printer by id when Path is empty;
	// SerialNumber, if set, picks one of several identical printers.
	VendorID, ProductID uint16
	SerialNumber        string
	// Queue is the Windows printer queue name for winspool.
	Queue string
}

// ByID reports whether a usb target names its printer by VID:PID rather than
// by device path.
func (t Target) ByID() bool { return t.Scheme == SchemeUSB && t.Path == "" }

// String returns the canonical form of the URL, with defaults filled in.
func (t Target) String() string {
	switch t.Scheme {
	case SchemeTCP:
		return "tcp://" + t.Addr
	case SchemeSerial:
		l := t.Line
		return fmt.Sprintf("serial://%s?baud=%d&data=%d&parity=%s&stop=%d&flow=%s", t.Path, l.Baud, l.DataBits, l.Parity, l.StopBits, l.Flow)
	case SchemeUSB:
		if t.ByID() {
			s := fmt.Sprintf("usb://%04x:%04x", t.VendorID, t.ProductID)
			if t.SerialNumber != "" {
				s += "?serial=" + url.QueryEscape(t.SerialNumber)
			}
			return s
		}
		return "usb://" + t.Path
	case SchemeWinspool:
		return "winspool://" + t.Queue
	}
	return t.Raw
}

// ParseURL validates a printer URL from the config and returns what it
// names. The agent calls it at start so a typo is reported with the config
// line instead of surfacing as a printer that never prints; errors therefore
// say what is wrong and what a good URL looks like.
func ParseURL(rawURL string) (Target, error) {
	s := strings.TrimSpace(rawURL)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return Target{}, fmt.Errorf("printer url %q has no scheme: write tcp://HOST:9100, serial:///dev/ttyUSB0, usb:///dev/usb/lp0, usb://VID:PID or winspool://QUEUE", rawURL)
	}
	t := Target{Scheme: Scheme(strings.ToLower(scheme)), Raw: rawURL}
	var err error
	switch t.Scheme {
	case SchemeTCP:
		err = parseTCP(&t, rest)
	case SchemeSerial:
		err = parseSerial(&t, rest)
	case SchemeUSB:
		err = parseUSB(&t, rest)
	case SchemeWinspool:
		err = parseWinspool(&t, rest)
	default:
		return Target{}, fmt.Errorf("printer url %q: unknown scheme %q: use tcp, serial, usb or winspool", rawURL, scheme)
	}
	if err != nil {
		return Target{}, fmt.Errorf("printer url %q: %w", rawURL, err)
	}
	return t, nil
}

func parseTCP(t *Target, rest string) error {
	if strings.ContainsAny(rest, "?#") {
		return fmt.Errorf("tcp urls take no parameters: write tcp://HOST:PORT")
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.Contains(rest, "/") {
		return fmt.Errorf("tcp urls have no path: write tcp://HOST:PORT")
	}
	if rest == "" {
		return fmt.Errorf("host missing: write tcp://HOST:PORT")
	}
	host, port := rest, strconv.Itoa(DefaultTCPPort)
	if h, p, err := net.SplitHostPort(rest); err == nil {
		host, port = h, p
		if port == "" {
			return fmt.Errorf("port missing after ':': write tcp://%s:9100 or leave out the colon for the default 9100", h)
		}
	} else if strings.HasPrefix(rest, "[") {
		// [v6addr] without a port
		if !strings.HasSuffix(rest, "]") {
			return fmt.Errorf("bad address %q: write tcp://[IPv6]:PORT", rest)
		}
		host = rest[1 : len(rest)-1]
	} else if strings.Count(rest, ":") > 0 {
		return fmt.Errorf("bad address %q: write tcp://HOST:PORT (IPv6 addresses in brackets)", rest)
	}
	if host == "" {
		return fmt.Errorf("host missing: write tcp://HOST:PORT")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("bad port %q: want a number from 1 to 65535 (raw printing is usually 9100)", port)
	}
	t.Addr = net.JoinHostPort(host, port)
	return nil
}

var comPort = regexp.MustCompile(`(?i)^COM[1-9][0-9]*$`)

func parseSerial(t *Target, rest string) error {
	pathPart, query, _ := strings.Cut(rest, "?")
	if i := strings.Index(pathPart, "#"); i >= 0 {
		return fmt.Errorf("unexpected '#' in serial url")
	}
	switch {
	case strings.HasPrefix(pathPart, "/"):
		t.Path = pathPart
	case comPort.MatchString(pathPart):
		t.Path = strings.ToUpper(pathPart)
	case pathPart == "":
		return fmt.Errorf("serial device missing: write serial:///dev/ttyUSB0 (three slashes) or serial://COM3")
	default:
		return fmt.Errorf("serial device %q is neither an absolute path nor COMn: write serial:///dev/ttyUSB0 (three slashes) or serial://COM3", pathPart)
	}
	t.Line = DefaultLineSettings
	q, err := url.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("bad parameters %q: %w", query, err)
	}
	for key, vals := range q {
		v := strings.ToLower(vals[len(vals)-1])
		switch key {
		case "baud":
			n, err := strconv.Atoi(v)
			if err != nil || !isStandardBaud(n) {
				return fmt.Errorf("bad baud %q: want one of %s (receipt printers usually use 9600, 19200, 38400 or 115200)", v, baudList())
			}
			t.Line.Baud = n
		case "data":
			n, err := strconv.Atoi(v)
			if err != nil || n < 5 || n > 8 {
				return fmt.Errorf("bad data bits %q: want 5, 6, 7 or 8 (printers use 8)", v)
			}
			t.Line.DataBits = n
		case "stop":
			n, err := strconv.Atoi(v)
			if err != nil || (n != 1 && n != 2) {
				return fmt.Errorf("bad stop bits %q: want 1 or 2", v)
			}
			t.Line.StopBits = n
		case "parity":
			switch Parity(v) {
			case ParityNone, ParityEven, ParityOdd:
				t.Line.Parity = Parity(v)
			default:
				return fmt.Errorf("bad parity %q: want none, even or odd", v)
			}
		case "flow":
			switch Flow(v) {
			case FlowNone, FlowRTSCTS, FlowDSRDTR, FlowXONXOFF:
				t.Line.Flow = Flow(v)
			default:
				return fmt.Errorf("unknown flow mode %q: want rtscts, dsrdtr, xonxoff or none (see the printer's DIP switches or self-test page)", v)
			}
		default:
			return fmt.Errorf("unknown serial parameter %q: known are baud, data, parity, stop and flow", key)
		}
	}
	return nil
}

func isStandardBaud(n int) bool {
	for _, b := range standardBauds {
		if b == n {
			return true
		}
	}
	return false
}

func baudList() string {
	s := make([]string, len(standardBauds))
	for i, b := range standardBauds {
		s[i] = strconv.Itoa(b)
	}
	return strings.Join(s, ", ")
}

var vidPID = regexp.MustCompile(`^([0-9A-Fa-f]{4}):([0-9A-Fa-f]{4})$`)

func parseUSB(t *Target, rest string) error {
	id, query, _ := strings.Cut(rest, "?")
	if strings.HasPrefix(id, "/") {
		if query != "" {
			return fmt.Errorf("usb device paths take no parameters")
		}
		if id == "/" {
			return fmt.Errorf("usb device missing: write usb:///dev/usb/lp0 or usb://VID:PID")
		}
		t.Path = id
		return nil
	}
	if id == "" {
		return fmt.Errorf("usb device missing: write usb:///dev/usb/lp0 (three slashes) or usb://VID:PID such as usb://04b8:0202")
	}
	m := vidPID.FindStringSubmatch(id)
	if m == nil {
		return fmt.Errorf("bad VID:PID %q: want four hex digits each, such as usb://04b8:0202 (see lsusb), or a device path usb:///dev/usb/lp0", id)
	}
	v, _ := strconv.ParseUint(m[1], 16, 16)
	p, _ := strconv.ParseUint(m[2], 16, 16)
	t.VendorID, t.ProductID = uint16(v), uint16(p)
	q, err := url.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("bad parameters %q: %w", query, err)
	}
	for key, vals := range q {
		if key != "serial" {
			return fmt.Errorf("unknown usb parameter %q: the only one is serial (to pick one of several identical printers)", key)
		}
		t.SerialNumber = vals[len(vals)-1]
	}
	return nil
}

func parseWinspool(t *Target, rest string) error {
	name := rest
	if strings.Contains(name, "%") {
		n, err := url.PathUnescape(name)
		if err != nil {
			return fmt.Errorf("bad queue name %q: %w", name, err)
		}
		name = n
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return fmt.Errorf("queue name missing: write winspool://NAME with the name shown in Windows Printers & scanners")
	}
	t.Queue = name
	return nil
}

// label is how errors name the printer: as the user wrote it when known.
func (t Target) label() string {
	if t.Raw != "" {
		return t.Raw
	}
	return t.String()
}
