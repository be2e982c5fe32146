package localapi_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"printgate/agent/localapi"
)

// These tests run a real server on 127.0.0.1, since only a real connection
// has deadlines. They never sleep: each waits for the event it expects (the
// server closing the connection, a handler's read or write failing) and
// fails if that takes longer than bound, far above the small timeouts used.
const bound = 5 * time.Second

// small are timeouts short enough for a test, each distinct so a test can
// tell which one acted.
var small = localapi.ServerTimeouts{
	ReadHeaderTimeout: 150 * time.Millisecond,
	ReadTimeout:       1500 * time.Millisecond,
	WriteTimeout:      600 * time.Millisecond,
	IdleTimeout:       150 * time.Millisecond,
}

// serve runs NewServer(h, t, logger) on a fresh 127.0.0.1 port until the
// test ends and returns its address.
func serve(t *testing.T, h http.Handler, to localapi.ServerTimeouts, logger *slog.Logger) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := localapi.NewServer(h, to, logger)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClosed reads c until the server closes it, and fails if that takes
// longer than bound. It returns what was read.
func waitClosed(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(bound))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %s (read %q)", bound, got)
	}
	return got
}

// TestServerCutsSlowHeaders ensures a client that starts a request and never
// finishes its headers is disconnected after ReadHeaderTimeout, without an
// answer and before the handler runs.
func TestServerCutsSlowHeaders(t *testing.T) {
	called := make(chan struct{}, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called <- struct{}{} }), small, nil)
	c := dial(t, addr)
	start := time.Now()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: printgate\r\nX-Slow: a")
	got := waitClosed(t, c)
	// The header deadline runs from when the server accepted the
	// connection; closing before ReadTimeout shows it was this one.
	if took := time.Since(start); took >= small.ReadTimeout {
		t.Errorf("closed after %s, want after ReadHeaderTimeout %s, before ReadTimeout %s", took, small.ReadHeaderTimeout, small.ReadTimeout)
	}
	if len(got) != 0 {
		t.Errorf("the server answered a request it never finished reading: %q", got)
	}
	select {
	case <-called:
		t.Error("the handler ran for an unfinished request")
	default:
	}
}

// TestServerCutsSlowBody ensures a client that sends its headers and then
// trickles the body has the body read fail at ReadTimeout, so a handler
// waiting on it (the intake) gives up.
func TestServerCutsSlowBody(t *testing.T) {
	readErr := make(chan error, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), small, nil)
	c := dial(t, addr)
	io.WriteString(c, "POST /api/v1/tasks HTTP/1.1\r\nHost: printgate\r\nContent-Length: 1000\r\n\r\n{\"task_no\":")
	select {
	case err := <-readErr:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("the handler's body read ended with %v, want a timeout", err)
		}
	case <-time.After(bound):
		t.Fatalf("the handler was still reading the body after %s", bound)
	}
	waitClosed(t, c)
}

// TestServerCutsStalledReader ensures an answer to a client that stops
// reading is abandoned at WriteTimeout instead of blocking the handler.
func TestServerCutsStalledReader(t *testing.T) {
	writeErr := make(chan error, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
	}), small, nil)
	c := dial(t, addr)
	io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: printgate\r\n\r\n")
	// ... and never read.
	select {
	case err := <-writeErr:
		if err == nil {
			t.Fatal("write failed without an error")
		}
	case <-time.After(bound):
		t.Fatalf("the handler was still writing to a client that reads nothing after %s", bound)
	}
}

// TestServerClosesIdle ensures a kept-alive connection with no next request
// is closed after IdleTimeout, and that a normal request is answered.
func TestServerClosesIdle(t *testing.T) {
	addr := serve(t, localapi.New(newFake(), localapi.Options{Token: testToken}), small, nil)
	c := dial(t, addr)
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: printgate\r\n\r\n")
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(bound))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET /healthz: %d, close %v; want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	start := time.Now()
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("unexpected bytes on an idle connection: %q", rest)
	}
	// Without IdleTimeout net/http would wait ReadTimeout.
	if took := time.Since(start); took >= small.ReadTimeout {
		t.Fatalf("an idle connection stayed open for %s, want about IdleTimeout %s", took, small.IdleTimeout)
	}
}

// TestServerDefaults ensures zero ServerTimeouts take the documented
// defaults (the write timeout leaves a slow /metrics scrape room), that a
// field set is kept, and that oversized headers are refused.
func TestServerDefaults(t *testing.T) {
	srv := localapi.NewServer(http.NotFoundHandler(), localapi.ServerTimeouts{}, nil)
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"ReadHeaderTimeout", srv.ReadHeaderTimeout, 10 * time.Second},
		{"ReadTimeout", srv.ReadTimeout, 30 * time.Second},
		{"WriteTimeout", srv.WriteTimeout, 60 * time.Second},
		{"IdleTimeout", srv.IdleTimeout, 120 * time.Second},
	} {
		if c.got != c.want {
			t.Errorf("default %s %s, want %s", c.name, c.got, c.want)
		}
	}
	if srv.WriteTimeout <= srv.ReadTimeout {
		t.Errorf("WriteTimeout %s is not above ReadTimeout %s: a slow scrape would be cut", srv.WriteTimeout, srv.ReadTimeout)
	}
	if srv := localapi.NewServer(http.NotFoundHandler(), localapi.ServerTimeouts{WriteTimeout: time.Hour}, nil); srv.WriteTimeout != time.Hour || srv.ReadTimeout != 30*time.Second {
		t.Errorf("set WriteTimeout 1h: got write %s read %s", srv.WriteTimeout, srv.ReadTimeout)
	}

	addr := serve(t, http.NotFoundHandler(), small, nil)
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: printgate\r\nX-Big: "+strings.Repeat("a", 128<<10)+"\r\n\r\n")
	if got := waitClosed(t, c); !bytes.HasPrefix(got, []byte("HTTP/1.1 431")) {
		t.Errorf("128 KiB of headers answered %.40q, want 431", got)
	}
}

// TestServerErrorLog ensures the server's own log lines reach the logger:
// failed TLS handshakes (routine on a LAN) at debug, anything else at warn,
// instead of the standard logger's stderr.
func TestServerErrorLog(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := localapi.NewServer(http.NotFoundHandler(), localapi.ServerTimeouts{}, logger)
	if srv.ErrorLog == nil {
		t.Fatal("ErrorLog is nil: the server would log to stderr")
	}
	srv.ErrorLog.Printf("http: TLS handshake error from 192.168.1.66:5000: EOF")
	srv.ErrorLog.Printf("http: Accept error: too many open files; retrying in 5ms")
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[0], "192.168.1.66:5000") ||
		!strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "too many open files") {
		t.Errorf("server log lines:\n%s\nwant the handshake at DEBUG and the accept error at WARN", logs.String())
	}
}
