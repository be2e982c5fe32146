package drivers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestWrapErr ensures each failure class gets its hint and retry verdict
// and stays reachable through errors.Is.
func TestWrapErr(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		hint  string
		retry bool
	}{
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection refused by 10.0.0.9:9100: is the printer on and the address right?", true},
		{"no route", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, "no route to host 10.0.0.9:9100", true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "closed the connection", true},
		{"permission", &os.PathError{Op: "open", Path: "/dev/ttyUSB0", Err: syscall.EACCES}, "usermod -aG lp printgate", false},
		{"busy", syscall.EBUSY, "another program has the printer open", true},
		{"no device", syscall.ENODEV, "no such device", true},
		{"paper out", syscall.ENOSPC, "out of paper?", true},
		{"timeout", fmt.Errorf("x: %w", os.ErrDeadlineExceeded), "no answer from 10.0.0.9:9100", true},
		{"one way", ErrOneWay, "one-way", false},
		{"closed", net.ErrClosed, "already closed", false},
		{"canceled", context.Canceled, "canceled", false},
		{"dns not found", &net.DNSError{Err: "no such host", Name: "kitchen.lan", IsNotFound: true}, `no such host "kitchen.lan"`, false},
		{"dns flaky", &net.DNSError{Err: "server misbehaving", Name: "kitchen.lan", IsTemporary: true}, `cannot resolve "kitchen.lan"`, true},
		{"unknown", errors.New("strange"), "", true},
	}
	for _, tt := range tests {
		err := wrapErr("dial", "tcp://10.0.0.9", "10.0.0.9:9100", tt.err)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: %T", tt.name, err)
			continue
		}
		if !strings.Contains(pe.Hint, tt.hint) || (tt.hint == "" && pe.Hint != "") {
			t.Errorf("%s: hint %q, want %q", tt.name, pe.Hint, tt.hint)
		}
		if pe.Retryable() != tt.retry {
			t.Errorf("%s: retryable %v, want %v", tt.name, pe.Retryable(), tt.retry)
		}
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: errors.Is lost the cause", tt.name)
		}
		if !strings.HasPrefix(err.Error(), "dial tcp://10.0.0.9: ") {
			t.Errorf("%s: text %q does not name op and printer", tt.name, err)
		}
	}
	if wrapErr("read", "t", "a", nil) != nil {
		t.Error("nil not passed through")
	}
	inner := wrapErr("read", "t", "a", syscall.EIO)
	if wrapErr("write", "t2", "b", inner) != inner {
		t.Error("an *Error was wrapped twice")
	}
	if errors.Is(wrapErr("read", "t", "a", io.ErrUnexpectedEOF), io.EOF) {
		t.Error("unexpected EOF became EOF")
	}
}
