package spool

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"printgate/taskdef"
)

// The limits of a task at intake (PROTOCOL.md §3), in the one place every
// door (the LAN API, the cloud link, the raw port, reprint) and the spool's
// own record check read them from, so a door cannot take what another
// refuses.
const (
	// MaxTaskNoLen is the longest task_no; TaskNoChars lists its alphabet.
	MaxTaskNoLen = 128
	// MaxPrinterNameLen is the longest printer name (the config's rule).
	MaxPrinterNameLen = 64
	// MinTimeout and MaxTimeout bound the timeout a submitter may ask for.
	// Below a second a ticket times out before any printer could take it;
	// beyond a day it would print long after anyone wanted it, so either
	// is a mistake in the submitter's units.
	MinTimeout = time.Second
	MaxTimeout = 24 * time.Hour
	// DefaultMaxTaskBytes is the default limit of a task's payload or
	// document (Options.MaxTaskBytes); the LAN API sizes its request limit
	// from it.
	DefaultMaxTaskBytes = 1 << 20
)

// TaskNoChars describes the task_no alphabet, for messages.
const TaskNoChars = "A-Z a-z 0-9 . _ : -"

// ValidTaskNo reports whether s is a well-formed task_no: 1–128 characters
// of [A-Za-z0-9._:-].
func ValidTaskNo(s string) error {
	if len(s) == 0 || len(s) > MaxTaskNoLen {
		return fmt.Errorf("%w: task_no must be 1-%d characters, got %d", ErrInvalid, MaxTaskNoLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if !keyChar(s[i], true) {
			return fmt.Errorf("%w: task_no %q has character %q at position %d; allowed are %s", ErrInvalid, s, s[i], i+1, TaskNoChars)
		}
	}
	return nil
}

// ValidPrinterName reports whether s can name a printer: 1–64 characters of
// [A-Za-z0-9._-]. The config uses the same rule.
func ValidPrinterName(s string) error {
	if len(s) == 0 || len(s) > MaxPrinterNameLen {
		return fmt.Errorf("%w: printer name must be 1-%d characters, got %d", ErrInvalid, MaxPrinterNameLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if !keyChar(s[i], false) {
			return fmt.Errorf("%w: printer name %q has character %q; allowed are A-Z a-z 0-9 . _ -", ErrInvalid, s, s[i])
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

// Priorities lists the priorities a task may carry (taskdef.Priorities).
func Priorities() []Priority { return taskdef.Priorities() }

// ValidPriority reports whether p is a priority a task may carry: one of
// Priorities, or empty for normal.
func ValidPriority(p Priority) bool {
	return p == "" || slices.Contains(Priorities(), p)
}

// ParseTimeout reads a submitter's timeout, a Go duration such as "90s",
// and checks it against MinTimeout and MaxTimeout. Empty is 0: the
// printer's default. The error is a sentence for the submitter (each door
// answers it with its own bad_timeout).
func ParseTimeout(text string) (time.Duration, error) {
	if text == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeout %q is not a positive duration like \"90s\" or \"2m\"", text)
	}
	if d < MinTimeout || d > MaxTimeout {
		return 0, fmt.Errorf("timeout %q is out of range: it must be from %s to %s", text, shortDuration(MinTimeout), shortDuration(MaxTimeout))
	}
	return d, nil
}

// shortDuration writes d as a person would type it: "24h", not "24h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
