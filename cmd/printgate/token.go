package main

import (
	"flag"
	"fmt"
	"io"

	"printgate/agent/config"
)

func init() {
	register("token", command{summary: "print a new random API token for the config", run: runToken})
}

func runToken(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate token\n\nPrints a new random API token (32 characters). Save it where the config\nnames it, e.g. printgate token > /etc/printgate/api-token.txt with\napi_token_file = \"api-token.txt\", and give the same token to the POS.")
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	fmt.Fprintln(stdout, config.NewToken())
	return 0
}
