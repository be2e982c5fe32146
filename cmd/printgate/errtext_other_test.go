//go:build !windows

package main

import "strings"

// notFoundText stands in a test's table for the OS's words for a missing
// file; saysNotFound reports whether stderr holds them.
const notFoundText = "no such file"

func saysNotFound(stderr string) bool { return strings.Contains(stderr, notFoundText) }
