package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"

	"printgate/cmd/printgate/internal/version"
)

func init() {
	register("version", command{summary: "print the build version", run: runVersion})
}

// runVersion is `printgate version`: one line with the build version, the
// OS/architecture and the Go release, for support tickets.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate version")
		fmt.Fprintln(stderr, "\nPrints the build version, the OS/architecture and the Go release on one line,")
		fmt.Fprintln(stderr, "e.g. \"printgate 1.4.0 linux/amd64 go1.26.0\". It takes no arguments.")
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	fmt.Fprintf(stdout, "printgate %s %s/%s %s\n", version.Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
	return 0
}
