// Package version holds the build version of the printgate binaries, set at
// link time by the Makefile so a support engineer can tell which build runs.
package version

// Version is the build version, overridden with -ldflags -X at build time.
var Version = "dev"
