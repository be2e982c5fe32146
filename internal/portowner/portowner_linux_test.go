package portowner

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListeningFindsThisProcess ensures the owner of a port this test
// listens on is found as this process, and a free port has none.
func TestListeningFindsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	p, ok := Listening(port)
	if !ok || p.PID != os.Getpid() {
		t.Fatalf("Listening(%d) = %v, %v; want this process, pid %d", port, p, ok, os.Getpid())
	}
	comm, _ := os.ReadFile(filepath.Join("/proc/self/comm"))
	if p.Name != strings.TrimSpace(string(comm)) {
		t.Errorf("name %q, want %q", p.Name, strings.TrimSpace(string(comm)))
	}
	ln.Close()
	if p, ok := Listening(port); ok {
		t.Errorf("a closed port is held by %v", p)
	}
}
