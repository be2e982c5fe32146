package rawport

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// stripSamples is one instance of every command the strip table takes out
// of a raw job (strip.go, PROTOCOL.md Raw port), by the name a test
// failure shows.
var stripSamples = []struct {
	name string
	cmd  []byte
}{
	{"ESC = 0 (printer disabled)", []byte{0x1B, '=', 0x00}},
	{"ESC = 2 (customer display only)", []byte{0x1B, '=', 0x02}},
	{"ESC v", []byte{0x1B, 'v'}},
	{"ESC u 0", []byte{0x1B, 'u', 0x00}},
	{"DLE DC4 2 (power off)", []byte{0x10, 0x14, 0x02, 0x01, 0x08}},
	{"DLE DC4 7 (transmit status)", []byte{0x10, 0x14, 0x07, 0x01}},
	{"DLE DC4 8 (clear buffers)", []byte{0x10, 0x14, 0x08, 0x01, 0x03, 0x14, 0x01, 0x06, 0x02, 0x08}},
	{"GS g 0 (reset maintenance counter)", []byte{0x1D, 'g', '0', 0x00, 0x14, 0x00}},
	{"GS g 2 (transmit maintenance counter)", []byte{0x1D, 'g', '2', 0x00, 0x14, 0x00}},
	{"GS j 1 (ink ASB)", []byte{0x1D, 'j', 0x01}},
	{"GS ( A (test print)", []byte{0x1D, '(', 'A', 0x02, 0x00, 0x00, 0x02}},
	{"GS ( C (NV user memory)", []byte{0x1D, '(', 'C', 0x05, 0x00, 0x00, 0x31, 0x00, 0x20, 0x20}},
	{"GS ( E fn 1 (enter user setting mode)", []byte{0x1D, '(', 'E', 0x03, 0x00, 0x01, 'I', 'N'}},
	{"GS ( E fn 3 (memory switch)", []byte{0x1D, '(', 'E', 0x0A, 0x00, 0x03, 0x01, '1', '1', '1', '1', '1', '1', '1', '1'}},
	{"GS ( M (save settings)", []byte{0x1D, '(', 'M', 0x02, 0x00, 0x01, 0x01}},
	{"GS ( H fn 49 (offline response)", []byte{0x1D, '(', 'H', 0x03, 0x00, 0x31, 0x30, 0x01}},
	{"GS ( L fn 48 (NV capacity)", []byte{0x1D, '(', 'L', 0x02, 0x00, 0x30, 0x30}},
	{"GS ( L fn 65 (delete all NV graphics)", []byte{0x1D, '(', 'L', 0x05, 0x00, 0x30, 0x41, 'C', 'L', 'R'}},
	{"GS ( L fn 67 (define NV graphics)", []byte{0x1D, '(', 'L', 0x0C, 0x00, 0x30, 0x43, 0x30, 0x20, 0x20, 0x01, 0x08, 0x00, 0x01, 0x00, 0x31, 0xFF}},
	{"GS 8 L fn 67 (define NV graphics)", []byte{0x1D, '8', 'L', 0x0C, 0x00, 0x00, 0x00, 0x30, 0x43, 0x30, 0x20, 0x20, 0x01, 0x08, 0x00, 0x01, 0x00, 0x31, 0xFF}},
	{"FS ( e (optional ASB)", []byte{0x1C, '(', 'e', 0x02, 0x00, 0x33, 0x08}},
	{"FS g 1 (write NV user memory)", []byte{0x1C, 'g', '1', 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 'A', 'B', 'C'}},
	{"FS g 2 (read NV user memory)", []byte{0x1C, 'g', '2', 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00}},
	{"FS q (define NV bit image)", []byte{0x1C, 'q', 0x01, 0x01, 0x00, 0x01, 0x00, 1, 2, 3, 4, 5, 6, 7, 8}},
	{"FS ( E (NV logo key codes)", []byte{0x1C, '(', 'E', 0x03, 0x00, 0x3C, 0x02, 0x30}},
	{"FS ( L fn 33 (NV paper layout)", []byte{0x1C, '(', 'L', 0x04, 0x00, 0x21, 0x30, 0x30, 0x30}},
	{"FS ( L fn 34 (transmit paper layout)", []byte{0x1C, '(', 'L', 0x03, 0x00, 0x22, 0x30, 0x40}},
	{"GS ( k fn 82 (transmit symbol size)", []byte{0x1D, '(', 'k', 0x03, 0x00, 0x31, 0x52, 0x30}},
	{"GS ^ r t 1 (macro waits for FEED)", []byte{0x1D, '^', 0x01, 0x00, 0x01}},
}

// unframedSamples are commands the decoder has no reference length for:
// the port removes their two bytes and reads whatever follows as data.
var unframedSamples = []struct {
	name string
	cmd  []byte
}{
	{"ESC Z (clone QR)", []byte{0x1B, 'Z'}},
	{"FS ?", []byte{0x1C, '?'}},
	{"GS C", []byte{0x1D, 'C'}},
	{"ESC f", []byte{0x1B, 'f'}},
	{"GS D (BMP graphics)", []byte{0x1D, 'D'}},
	{"DLE DC4 3 (real-time buzzer, longer on some models)", []byte{0x10, 0x14}},
}

// feedConn runs chunks through one connection's reader, each chunk as one
// read, and returns the job's bytes and the answers the port sent. No job
// is handed over: the test reads what would be.
func feedConn(t *testing.T, chunks ...[]byte) (data, answers []byte) {
	t.Helper()
	p := startPort(t, newSink(), Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	cn := newConn(p, server, "test", netip.Addr{}, p.line.take())
	for _, b := range chunks {
		if !cn.receive(b, time.Now()) {
			t.Fatal("the connection was reset")
		}
	}
	if len(cn.buf) != 0 {
		t.Fatalf("% x left unframed", cn.buf)
	}
	cn.flush() // the answers serve queues, as it writes them
	cn.giveTurn()
	server.Close()
	answers, _ = io.ReadAll(client)
	return cn.data, answers
}

// bytewise splits b into reads of one byte each.
func bytewise(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

// boldOn is ESC ! 8, the kept command right after each stripped one: a
// filter that eats a byte too many or too few breaks it.
var boldOn = []byte{0x1B, '!', 0x08}

// TestStripTable ensures every stripped command leaves a raw job whole and
// framed as the printer frames it: in the middle of a job, at once or one
// byte per read, with the command right after it intact.
func TestStripTable(t *testing.T) {
	for _, tc := range stripSamples {
		t.Run(tc.name, func(t *testing.T) {
			job := cat(escInit, []byte("BEFORE\n"), tc.cmd, boldOn, []byte("AFTER\n"), cutFull)
			want := cat(escInit, []byte("BEFORE\n"), boldOn, []byte("AFTER\n"), cutFull)
			for _, split := range []struct {
				name   string
				chunks [][]byte
			}{{"one read", [][]byte{job}}, {"byte per read", bytewise(job)}} {
				data, _ := feedConn(t, split.chunks...)
				if !bytes.Equal(data, want) {
					t.Fatalf("%s: job % x\nwant % x", split.name, data, want)
				}
			}
			tks, _ := printertest.Parse(want, false)
			if len(tks) != 1 || !tks[0].Contains("BEFORE") || !tks[0].Contains("AFTER") {
				t.Fatalf("the job does not print: %+v", tks)
			}
		})
	}
}

// TestStripUnframed ensures a command the decoder cannot frame never
// reaches the printer: its two bytes are removed, at once or one byte per
// read, and the command right after it is intact.
func TestStripUnframed(t *testing.T) {
	for _, tc := range unframedSamples {
		t.Run(tc.name, func(t *testing.T) {
			job := cat(escInit, []byte("BEFORE\n"), tc.cmd, boldOn, []byte("AFTER\n"), cutFull)
			want := cat(escInit, []byte("BEFORE\n"), boldOn, []byte("AFTER\n"), cutFull)
			for _, chunks := range [][][]byte{{job}, bytewise(job)} {
				if data, _ := feedConn(t, chunks...); !bytes.Equal(data, want) {
					t.Fatalf("job % x\nwant % x", data, want)
				}
			}
		})
	}
}

// TestStripAloneIsNoJob ensures a connection that sends only stripped
// commands (and ESC @) makes no job: there is nothing to print.
func TestStripAloneIsNoJob(t *testing.T) {
	var all []byte
	for _, tc := range stripSamples {
		if tc.name == "ESC v" {
			// Answered (TestStripAnswersESCv): its byte would race the
			// sync's DLE EOT answer, which the port sends as the bytes
			// arrive, before it frames the commands.
			continue
		}
		all = append(all, tc.cmd...)
	}
	s := newSink()
	p := startPort(t, s, Options{IdleGap: 50 * time.Millisecond})
	c := dial(t, p)
	write(t, c, cat(escInit, all))
	syncPort(t, c)
	_ = c.CloseWrite()
	noJob(t, s, 200*time.Millisecond)
}

// TestStripKeepsLookalikes ensures the commands that share a prefix with a
// stripped one, and that a POS job needs, pass unchanged.
func TestStripKeepsLookalikes(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  []byte
	}{
		{"ESC = 1 (printer enabled)", []byte{0x1B, '=', 0x01}},
		{"DLE DC4 1 (drawer pulse)", []byte{0x10, 0x14, 0x01, 0x00, 0x05}},
		{"GS ( L fn 112 (store graphics in the print buffer)", []byte{0x1D, '(', 'L', 0x0B, 0x00, 0x30, 0x70, 0x30, 0x01, 0x01, 0x31, 0x08, 0x00, 0x01, 0x00, 0xFF}},
		{"GS ( L fn 50 (print the buffered graphics)", []byte{0x1D, '(', 'L', 0x02, 0x00, 0x30, 0x32}},
		{"GS ( L fn 69 (print a stored NV graphic)", []byte{0x1D, '(', 'L', 0x06, 0x00, 0x30, 0x45, 0x20, 0x20, 0x01, 0x01}},
		{"GS 8 L fn 112", []byte{0x1D, '8', 'L', 0x0B, 0x00, 0x00, 0x00, 0x30, 0x70, 0x30, 0x01, 0x01, 0x31, 0x08, 0x00, 0x01, 0x00, 0xFF}},
		{"GS ( k QR store", []byte{0x1D, '(', 'k', 0x05, 0x00, 0x31, 0x50, 0x30, 'h', 'i'}},
		{"GS ( k QR print", []byte{0x1D, '(', 'k', 0x03, 0x00, 0x31, 0x51, 0x30}},
		{"FS ( L fn 48 (feed to the label)", []byte{0x1C, '(', 'L', 0x02, 0x00, 0x30, 0x30}},
		{"GS ^ r t 0 (run a macro)", []byte{0x1D, '^', 0x01, 0x00, 0x00}},
		{"ESC D tab stops", []byte{0x1B, 'D', 0x08, 0x10, 0x00}},
		{"GS ( K print density", []byte{0x1D, '(', 'K', 0x02, 0x00, 0x31, 0x02}},
		{"GS ( N character colour", []byte{0x1D, '(', 'N', 0x02, 0x00, 0x30, 0x31}},
		{"ESC c 5 (panel buttons)", []byte{0x1B, 'c', '5', 0x00}},
		{"FS p (print NV bit image)", []byte{0x1C, 'p', 0x01, 0x00}},
		{"ESC p (drawer)", []byte{0x1B, 'p', 0x00, 0x19, 0x78}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := cat(escInit, []byte("BEFORE\n"), tc.cmd, boldOn, []byte("AFTER\n"), cutFull)
			for _, chunks := range [][][]byte{{job}, bytewise(job)} {
				if data, _ := feedConn(t, chunks...); !bytes.Equal(data, job) {
					t.Fatalf("job % x\nwant % x", data, job)
				}
			}
		})
	}
}

// TestStripAnswersESCv ensures ESC v, a paper sensor query some POS send
// before printing, is answered by the port as GS r 1 is (the printer's
// answer would arrive in the agent's session) and split reads do not
// change that.
func TestStripAnswersESCv(t *testing.T) {
	job := cat(escInit, []byte{0x1B, 'v'}, []byte("X\n"), cutFull)
	for _, chunks := range [][][]byte{{job}, bytewise(job)} {
		data, answers := feedConn(t, chunks...)
		if !bytes.Equal(answers, []byte{0x00}) {
			t.Fatalf("answers % x, want 00 (paper present)", answers)
		}
		if want := cat(escInit, []byte("X\n"), cutFull); !bytes.Equal(data, want) {
			t.Fatalf("job % x, want % x", data, want)
		}
	}
}

// TestStripOverTheWire ensures a whole hostile job through the port is
// stored without any stripped command and still prints its text.
func TestStripOverTheWire(t *testing.T) {
	var body []byte
	for i, tc := range stripSamples {
		body = append(body, tc.cmd...)
		body = append(body, []byte{'L', byte('A' + i), '\n'}...)
	}
	s := newSink()
	p := startPort(t, s, Options{})
	c := dial(t, p)
	write(t, c, cat(escInit, body, cutFull))
	_ = c.CloseWrite()
	j := waitJob(t, s)
	for _, tc := range stripSamples {
		if bytes.Contains(j.Data, tc.cmd) {
			t.Errorf("%s reached the job", tc.name)
		}
	}
	tks, _ := printertest.Parse(j.Data, false)
	if len(tks) != 1 {
		t.Fatalf("%d tickets", len(tks))
	}
	for i := range stripSamples {
		if l := string([]byte{'L', byte('A' + i)}); !tks[0].Contains(l) {
			t.Errorf("line %s missing: %q", l, tks[0].Lines)
		}
	}
}
