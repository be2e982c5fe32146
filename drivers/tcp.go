package drivers

import (
	"context"
	"io"
	"net"
	"time"
)

// tcpConn is a raw-port (9100) printer connection. It wraps the socket only
// to turn errors into *Error and to drain unread answers on Close.
type tcpConn struct {
	c      *net.TCPConn
	target string
	addr   string
	drain  time.Duration
}

var _ Conn = (*tcpConn)(nil)

func openTCP(ctx context.Context, t Target, opts Options) (Conn, error) {
	d := net.Dialer{Timeout: opts.connectTimeout(), KeepAlive: opts.keepAlive()}
	c, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, wrapErr("dial", t.label(), t.Addr, err)
	}
	return &tcpConn{c: c.(*net.TCPConn), target: t.label(), addr: t.Addr, drain: opts.drainTimeout()}, nil
}

func (c *tcpConn) Read(p []byte) (int, error) {
	n, err := c.c.Read(p)
	if err == io.EOF {
		return n, err
	}
	return n, wrapErr("read", c.target, c.addr, err)
}

func (c *tcpConn) Write(p []byte) (int, error) {
	n, err := c.c.Write(p)
	return n, wrapErr("write", c.target, c.addr, err)
}

func (c *tcpConn) SetReadDeadline(t time.Time) error {
	return wrapErr("set deadline", c.target, c.addr, c.c.SetReadDeadline(t))
}

func (c *tcpConn) SetWriteDeadline(t time.Time) error {
	return wrapErr("set deadline", c.target, c.addr, c.c.SetWriteDeadline(t))
}

// Close reads and discards answers still pending for up to the drain
// timeout, then closes. Closing a socket with unread bytes in its receive
// buffer makes the kernel send RST instead of FIN, and a printer that gets a
// reset may throw away the end of the job still in its buffer; a half close
// (CloseWrite) is no better, as some printers end the connection on it. The
// drain stops early when the printer closes its side.
func (c *tcpConn) Close() error {
	if err := c.c.SetReadDeadline(time.Now().Add(c.drain)); err == nil {
		var buf [512]byte
		for {
			if _, err := c.c.Read(buf[:]); err != nil {
				break
			}
		}
	}
	return wrapErr("close", c.target, c.addr, c.c.Close())
}
