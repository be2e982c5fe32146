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

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	fmt.Fprintf(stdout, "printgate %s %s/%s %s\n", version.Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
	return 0
}
