// Package proctest holds what the tests that run the real binary as a
// child process share (cmd/printgate, the hostile suite, the Wine and USB
// VM checks): a free loopback port for its listener and a buffer its
// output is copied into while the test reads it. Only tests import it.
package proctest

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a child process to listen on.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

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
