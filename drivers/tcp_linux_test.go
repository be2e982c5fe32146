package drivers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fullListener returns the address of a loopback listener whose accept
// queue is full, so the kernel drops further SYNs and a dial can only time
// out: a connect timeout without sending anything off this machine.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
	// Backlog 0 still queues one connection; fill it.
	c, err := Open(context.Background(), "tcp://"+addr, Options{ConnectTimeout: 5 * time.Second, DrainTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return addr
}

// TestTCPConnectTimeout ensures dialing a printer that never answers the
// SYN ends after ConnectTimeout with a retryable timeout error.
func TestTCPConnectTimeout(t *testing.T) {
	addr := fullListener(t)
	start := time.Now()
	_, err := Open(context.Background(), "tcp://"+addr, Options{ConnectTimeout: 200 * time.Millisecond})
	took := time.Since(start)
	var pe *Error
	if !errors.As(err, &pe) || !pe.Timeout() || !pe.Retryable() {
		t.Fatalf("err = %v, want retryable timeout", err)
	}
	if !strings.Contains(err.Error(), "no answer from "+addr+" in time") {
		t.Errorf("hint missing: %v", err)
	}
	if took > 3*time.Second {
		t.Errorf("dial took %v with a 200ms connect timeout", took)
	}
}
