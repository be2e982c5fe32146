// Package proctest holds what the tests that run the real binary as a
// child process share (cmd/printgate, the hostile suite, the Wine and USB
// VM checks): a free loopback port for its listener and a buffer its
// output is copied into while the test reads it. Only tests import it.
package proctest

import (
	"bytes"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a child process to listen on. It is picked below the kernel's ephemeral
// range (32768 and up on Linux, 49152 and up on Windows): a port the
// kernel handed out (to a listener on port 0 or an outgoing connection of
// any test running meanwhile) was taken again between this check and the
// child's bind, and the child failed to start. Only another test picking
// the same port here at random can still collide.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 64 {
		port := lowPortMin + rand.IntN(lowPortMax-lowPortMin)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return port
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lowPortMin and lowPortMax bound FreePort's ports: above the registered
// services most machines run, below every OS's ephemeral range.
const (
	lowPortMin = 20000
	lowPortMax = 32000
)

// Buffer collects a child's output: exec copies into it from its own
// goroutine while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
