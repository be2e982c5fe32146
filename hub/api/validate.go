package api

import (
	"fmt"
	"time"
)

// The limits of a job, the agent's (PROTOCOL.md §3): the hub refuses what
// the agent would, so a job it stores is one the agent can take. They are
// the spool's values, restated because the hub does not import the spool;
// validate_test.go holds them to it.
const (
	maxTaskNoLen      = 128
	maxPrinterNameLen = 64
	maxTaskBytes      = 1 << 20
	minTimeout        = time.Second
	maxTimeout        = 24 * time.Hour
	taskNoChars       = "A-Z a-z 0-9 . _ : -"
)

// checkTaskNo reports why s is not a task_no: 1-128 characters of
// [A-Za-z0-9._:-].
func checkTaskNo(s string) error {
	if len(s) == 0 || len(s) > maxTaskNoLen {
		return fmt.Errorf("task_no must be 1-%d characters, got %d", maxTaskNoLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if !keyChar(s[i], true) {
			return fmt.Errorf("task_no %q has character %q at position %d; allowed are %s", s, s[i], i+1, taskNoChars)
		}
	}
	return nil
}

// checkPrinter reports why s cannot name a printer: 1-64 characters of
// [A-Za-z0-9._-].
func checkPrinter(s string) error {
	if len(s) == 0 || len(s) > maxPrinterNameLen {
		return fmt.Errorf("printer name must be 1-%d characters, got %d", maxPrinterNameLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if !keyChar(s[i], false) {
			return fmt.Errorf("printer name %q has character %q; allowed are A-Z a-z 0-9 . _ -", s, s[i])
		}
	}
	return nil
}

func keyChar(c byte, colon bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c == '.' || c == '_' || c == '-':
		return true
	case c == ':':
		return colon
	}
	return false
}

// checkTimeout reads a timeout as the agent does: empty, or a Go duration
// from 1s to 24h.
func checkTimeout(text string) error {
	if text == "" {
		return nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d <= 0 {
		return fmt.Errorf("timeout %q is not a positive duration like \"90s\" or \"2m\"", text)
	}
	if d < minTimeout || d > maxTimeout {
		return fmt.Errorf("timeout %q is out of range: it must be from 1s to 24h", text)
	}
	return nil
}
