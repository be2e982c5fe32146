package main

import "strings"

// notFoundText stands in a test's table for the OS's words for a missing
// file; saysNotFound reports whether stderr holds them: "The system cannot
// find the file specified." (or path) on Windows, "File not found." or
// "Path not found." under Wine.
const notFoundText = "(file not found)"

func saysNotFound(stderr string) bool {
	return strings.Contains(stderr, "cannot find the") || strings.Contains(stderr, "not found.")
}
