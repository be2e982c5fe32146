package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"printgate/cmd/printgate/internal/version"
	"printgate/sync/cloudcheck"
)

func init() {
	register("cloudcheck", command{summary: "check a cloud implementation against the agent's side of the protocol (PROTOCOL §5–§7)", run: withSignals(cloudcheckCmd)})
}

// cloudcheckCmd is `printgate cloudcheck --cloud URL [--auth-url URL]
// [--json]`: it plays agents against the cloud and prints one line per
// check. Exit 1 when a check failed, 2 for a usage error.
func cloudcheckCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cloudcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cloud := fs.String("cloud", "", "the cloud's agent websocket `URL`, as the agent's [cloud] url (wss://, or ws:// to this machine)")
	authURL := fs.String("auth-url", "", "the device flow's base `URL`, as the agent's [cloud] auth_url; without it the pairing checks are skipped")
	testAPI := fs.String("test-api", "", "the base `URL` of the cloud's test API (PROTOCOL §7); default: the origin of --cloud")
	noTestAPI := fs.Bool("no-test-api", false, "do not use a test API: check only what a cloud without one shows")
	token := fs.String("token", "", "a device `token` the cloud accepts, for a cloud without a test API (with --agent-id)")
	agentID := fs.String("agent-id", "", "the agent `id` the --token belongs to")
	caFile := fs.String("ca-file", "", "PEM `file` of the certificates that sign the cloud's (default: the system's roots)")
	only := fs.String("only", "", "comma-separated checks or groups to run (e.g. events,pairing.slow_down); default: all")
	asJSON := fs.Bool("json", false, "print the report as JSON (PROTOCOL §7), for a CI")
	verbose := fs.Bool("v", false, "print the played agents' own logs on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate cloudcheck --cloud URL [--auth-url URL] [--json]")
		fmt.Fprintln(stderr, "\nPlays agents (the agent's real link code, a spool in a temporary directory, no")
		fmt.Fprintln(stderr, "printers) against a cloud that implements PROTOCOL §5–§6 and reports each check:")
		fmt.Fprintln(stderr, "handshake, jobs, events, commands and pairing. Checks that must drive the cloud")
		fmt.Fprintln(stderr, "(queue a job, send a command, approve a code) use its test API (PROTOCOL §7) and")
		fmt.Fprintln(stderr, "are skipped, with the reason, when it has none. Run it against a staging cloud:")
		fmt.Fprintln(stderr, "the test API must never be open in production. Exits 1 when a check failed.")
		fmt.Fprintln(stderr, "\nExample, against the reference cloud (go run ./cmd/cloudsim):")
		fmt.Fprintln(stderr, "  printgate cloudcheck --cloud ws://127.0.0.1:8700/agent/v1 --auth-url http://127.0.0.1:8700/oauth")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if *cloud == "" {
		fmt.Fprintln(stderr, "printgate cloudcheck: --cloud is required: the cloud's agent websocket URL, e.g. wss://cloud.example.com/agent/v1")
		return 2
	}
	opts := cloudcheck.Options{
		CloudURL: *cloud, AuthURL: *authURL, TestAPI: *testAPI, NoTestAPI: *noTestAPI,
		Token: *token, AgentID: *agentID, Version: "cloudcheck " + version.Version,
	}
	if *only != "" {
		for _, n := range strings.Split(*only, ",") {
			n = strings.TrimSpace(n)
			if !knownCheck(n) {
				fmt.Fprintf(stderr, "printgate cloudcheck: --only: no check or group %q; the checks are %s\n", n, strings.Join(cloudcheck.Names, ", "))
				return 2
			}
			opts.Only = append(opts.Only, n)
		}
	}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintf(stderr, "printgate cloudcheck: --ca-file: %v\n", err)
			return 2
		}
		opts.RootCAs = x509.NewCertPool()
		if !opts.RootCAs.AppendCertsFromPEM(pem) {
			fmt.Fprintf(stderr, "printgate cloudcheck: --ca-file %s holds no PEM certificate\n", *caFile)
			return 2
		}
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rep, err := cloudcheck.Run(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "printgate", err)
		return 2
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "printgate cloudcheck: write the report:", err)
		return 1
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "printgate cloudcheck: interrupted; the checks not run are skipped")
		return 1
	}
	if !rep.OK() {
		return 1
	}
	return 0
}

// knownCheck reports whether name is a check or a group of checks.
func knownCheck(name string) bool {
	for _, n := range cloudcheck.Names {
		if n == name || strings.HasPrefix(n, name+".") {
			return true
		}
	}
	return false
}
