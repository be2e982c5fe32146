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

// wrapCase is one row of TestWrapErr: an error, the hint it gets and
// whether it is retryable.
type wrapCase struct {
	name  string
	err   error
	hint  string
	retry bool
}

// TestWrapErr ensures each failure class gets its hint and retry verdict
// and stays reachable through errors.Is.
func TestWrapErr(t *testing.T) {
	// The OS's own error numbers (errnoCases, per OS) first.
	tests := append(errnoCases(), []wrapCase{
		{"timeout", fmt.Errorf("x: %w", os.ErrDeadlineExceeded), "no answer from 10.0.0.9:9100", true},
		{"one way", ErrOneWay, "one-way", false},
		{"closed", net.ErrClosed, "already closed", false},
		{"canceled", context.Canceled, "canceled", false},
		{"dns not found", &net.DNSError{Err: "no such host", Name: "kitchen.lan", IsNotFound: true}, `no such host "kitchen.lan"`, false},
		{"dns flaky", &net.DNSError{Err: "server misbehaving", Name: "kitchen.lan", IsTemporary: true}, `cannot resolve "kitchen.lan"`, true},
		{"unknown", errors.New("strange"), "", true},
	}...)
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
