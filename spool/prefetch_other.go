//go:build !linux

package spool

import "os"

// prefetch is a no-op where the read-ahead advice is not wired up (see
// prefetch_linux.go).
func prefetch(f *os.File, size int64) {}
