//go:build !linux

package spool

import "testing"

func mountTmpfs(t *testing.T, size string) string {
	t.Skip("tmpfs disk-full test runs on Linux only")
	return ""
}
