package localapi_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"printgate/agent/localapi"
)

// limitedServer serves h on a loopback listener wrapped in a ConnLimiter
// with lim, stopped when the test ends.
func limitedServer(t *testing.T, lim localapi.ConnLimits, h http.Handler) string {
	t.Helper()
	addr, _ := limitedServerConns(t, lim, h)
	return addr
}

// limitedServerConns is limitedServer, with its ConnLimiter.
func limitedServerConns(t *testing.T, lim localapi.ConnLimits, h http.Handler) (string, *localapi.ConnLimiter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := localapi.LimitConns(ln, lim)
	srv := localapi.NewServer(h, localapi.ServerTimeouts{}, nil)
	srv.ConnState = conns.ConnState
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(conns) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String(), conns
}

// keepAlive opens a connection to addr, gets / on it and leaves it idle.
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c
}

// closedByServer reports whether the server closed c within d.
func closedByServer(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// TestConnLimiterClosesIdleFirst ensures a client at its bound that opens
// one more connection gets it served, and the connection it left idle
// longest is the one closed.
func TestConnLimiterClosesIdleFirst(t *testing.T) {
	addr, conns := limitedServerConns(t, localapi.ConnLimits{PerAddr: 2, Total: 100}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	// The client reads its answer before the server reports the
	// connection idle: wait for the server's side, or under load the first
	// is not idle yet (or idle later than the second) when the third comes.
	idle := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); conns.IdleConns() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("the server reported %d connections idle, want %d", conns.IdleConns(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	first := keepAlive(t, addr)
	idle(1)
	second := keepAlive(t, addr)
	idle(2)
	keepAlive(t, addr) // served: the first makes room
	if !closedByServer(first, 2*time.Second) {
		t.Error("the idle connection kept longest is still open past the bound")
	}
	if closedByServer(second, 100*time.Millisecond) {
		t.Error("a second idle connection was closed; one was enough")
	}
}

// TestConnLimiterNeverCutsARequest ensures a connection whose request is
// in flight is not closed to make room: the new connection waits, unread,
// until the request is answered, and is then served.
func TestConnLimiterNeverCutsARequest(t *testing.T) {
	release := make(chan struct{})
	addr := limitedServer(t, localapi.ConnLimits{PerAddr: 1, Total: 1}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
	}))
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	fmt.Fprintf(busy, "GET /slow HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	time.Sleep(100 * time.Millisecond) // let the server read it: it runs in this process, with nothing to wait on
	next := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			next <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			resp.Body.Close()
		}
		next <- err
	}()
	select {
	case err := <-next:
		t.Fatalf("a connection over the bound was answered (%v) while the one request in flight was not done", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	busy.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the request in flight was cut: %v", err)
	}
	resp.Body.Close()
	busy.Close() // ends its keep-alive: the waiting one takes its place
	if err := <-next; err != nil {
		t.Fatalf("the waiting connection was not served once there was room: %v", err)
	}
}

// TestConnLimiterCloseEndsWaiting ensures closing the listener closes the
// connections still waiting and ends its accept loop (the package's
// TestMain checks for goroutines left behind).
func TestConnLimiterCloseEndsWaiting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := localapi.LimitConns(ln, localapi.ConnLimits{PerAddr: 1})
	addr := ln.Addr().String()
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	served, err := conns.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer served.Close()
	waiting, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	if closedByServer(waiting, 200*time.Millisecond) {
		t.Fatal("a connection over its client's bound was closed instead of held")
	}
	if err := conns.Close(); err != nil {
		t.Fatal(err)
	}
	if !closedByServer(waiting, 2*time.Second) {
		t.Error("a waiting connection outlived the listener")
	}
	if _, err := conns.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
}
