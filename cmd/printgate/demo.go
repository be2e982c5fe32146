package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"syscall"

	"printgate/agent/daemon"
	"printgate/cmd/printgate/internal/demo"
	"printgate/cmd/printgate/internal/version"
)

func init() {
	register("demo", command{summary: "run everything on emulated printers and a local test cloud: no hardware, no account", run: withSignals(demoCmd, os.Interrupt, syscall.SIGTERM)})
}

// demoCmd is `printgate demo [--duration D] [--dir DIR] [--listen ADDR]`:
// the reference cloud, three emulated printers and the agent with its page,
// all in this process on 127.0.0.1, then six scripted steps (pairing,
// tickets through the cloud and the LAN API, a failover, a WAN cut and its
// replay), then the page keeps serving until ctx ends or --duration has
// passed. Everything it started is stopped before it returns; it exits 0
// when stopped, 1 when a step could not show what it shows.
func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	duration := fs.Duration("duration", 0, "stop after this long (0: run until Ctrl-C)")
	dir := fs.String("dir", "", "keep the demo's config, spool and log in this `directory` (default: a temporary one, removed at the end)")
	listen := fs.String("listen", demo.DefaultListen, "the `address` of the agent's page and API; if it is busy a free port is used")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate demo [--duration D] [--dir DIR] [--listen ADDR]")
		fmt.Fprintln(stderr, "\nRuns the whole product in one process with no hardware and no account: the")
		fmt.Fprintln(stderr, "reference cloud, three emulated printers and the agent with its page, pairs it,")
		fmt.Fprintln(stderr, "prints sample tickets, shows a failover and a WAN outage, then keeps the page")
		fmt.Fprintln(stderr, "up until Ctrl-C. Everything listens on 127.0.0.1 only.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if *duration < 0 {
		fmt.Fprintln(stderr, "printgate demo: --duration must not be negative")
		return 2
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	daemon.Version = version.Version
	d := demo.New(stdout)
	err := d.Run(ctx, *dir, *listen, *duration)
	if cerr := d.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "printgate demo: %v\n", err)
		return 1
	}
	// Close has stopped every printer: nothing else writes to stdout.
	fmt.Fprintln(stdout, "\nprintgate demo stopped: the agent, the cloud and the printers are gone.")
	if d.KeepsDir() {
		fmt.Fprintf(stdout, "Its config, spool and log stay in %s.\n", d.Dir())
	}
	return 0
}
