package rawport

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"printgate/drivers/escpos/decode"
)

// discardConn is a connection whose answers go nowhere, for driving a conn
// without a socket.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)      { return len(b), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) Close() error                     { return nil }
func (discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// recordSink takes every job.
type recordSink struct{ jobs []Job }

func (s *recordSink) Accept(_ context.Context, j Job) (string, error) {
	s.jobs = append(s.jobs, j)
	return "RAW_f", nil
}
func (s *recordSink) Ready(string) error                 { return nil }
func (s *recordSink) Refused(string, string, int, error) {}

// FuzzStream feeds any bytes, in any chunking, to the port's framing, as a
// client would send them, then ends the stream. Whatever the input: no
// panic; every job holds only bytes that were sent (never more in total),
// is within MaxJobBytes, and ends on a command boundary (the printer will
// not take the next job's bytes as arguments); and a job is made only from
// content.
func FuzzStream(f *testing.F) {
	f.Add([]byte("\x1b@HELLO\n\x1dV\x00"), uint8(3), false)
	f.Add([]byte("\x10\x04\x01\x1d\x72\x01\x1da\x0f\x1b@"), uint8(1), false)
	f.Add([]byte("\x1c&\xb0\x1dV\x00\x1c.\x1dV\x00"), uint8(2), true)
	f.Add([]byte("\x1b*\x21\x02\x00\x10\x04\x01\xff\xff\xff"), uint8(5), false)
	f.Add([]byte("\x1d(k\x03\x001A2\x1d(H\x06\x0000ABCD"), uint8(7), false)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, cjk bool) {
		o, err := Options{MaxJobBytes: 4096, Decode: decode.Options{PowerOnCJK: cjk},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		sink := &recordSink{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := &Port{printer: "F", sink: sink, o: o, dups: dupMemory{window: o.DupWindow}, ctx: ctx, cancel: cancel,
			conns: map[net.Conn]struct{}{}, line: newTurns()}
		c := newConn(p, discardConn{}, "fuzz", netip.Addr{}, p.line.take())
		step := int(chunk)%64 + 1
		now := time.Now()
		alive := true
		for i := 0; i < len(data) && alive; i += step {
			alive = c.receive(data[i:min(i+step, len(data))], now)
		}
		if alive {
			c.finish(len(c.buf) > 0)
		}
		total := 0
		for _, j := range sink.jobs {
			total += len(j.Data)
			if len(j.Data) == 0 || len(j.Data) > o.MaxJobBytes {
				t.Fatalf("job of %d bytes (max %d)", len(j.Data), o.MaxJobBytes)
			}
			// Read alone, from the mode the job started in, a job's bytes
			// end between commands.
			d := decode.NewWith(decode.Options{PowerOnCJK: cjk})
			rest := j.Data
			for len(rest) > 0 {
				n := d.Step(rest)
				if n == 0 {
					break
				}
				rest = rest[n:]
			}
			if len(rest) > 0 && !cjk {
				t.Fatalf("job ends inside a command: % x", rest)
			}
		}
		if total > len(data) {
			t.Fatalf("jobs hold %d bytes, %d were sent", total, len(data))
		}
	})
}
