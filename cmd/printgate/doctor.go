package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"printgate/agent/config"
	"printgate/cmd/printgate/internal/doctor"
)

func init() {
	register("doctor", command{summary: "check this machine's setup (config, disk, port, printers, devices, cloud, clock) and say how to fix what is wrong", run: runDoctor})
}

func runDoctor(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return doctorCmd(ctx, doctor.DefaultEnv, args, stdout, stderr)
}

// doctorCmd is `printgate doctor [--config FILE]`: every check in order,
// one line each, with a fix under each failure and warning. Exit 1 when
// any check failed.
func doctorCmd(ctx context.Context, env doctor.Env, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file` to check")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate doctor [--config FILE]")
		fmt.Fprintln(stderr, "\nChecks that this machine can run the agent and says how to fix what is wrong:")
		fmt.Fprintln(stderr, "the config, the data dir and its disk, the listen port, each printer, access")
		fmt.Fprintln(stderr, "to serial and USB devices, the cloud and the device token, and the clock.")
		fmt.Fprintln(stderr, "✓ passed, ! warning, ✗ failed, - skipped. Exits 1 when a check failed.")
		fmt.Fprintln(stderr, "Run it as the account the service runs as to check what the service can do.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	failed := 0
	show := func(rs ...doctor.Result) {
		for _, r := range rs {
			fmt.Fprintf(stdout, "%s %s: %s\n", r.Status.Mark(), r.Name, r.Detail)
			if r.Fix != "" && (r.Status == doctor.Fail || r.Status == doctor.Warn) {
				fmt.Fprintf(stdout, "    fix: %s\n", r.Fix)
			}
			if r.Status == doctor.Fail {
				failed++
			}
		}
	}
	if !doctor.Run(ctx, env, *configPath, show) {
		fmt.Fprintln(stdout, "- the other checks need a valid config")
		return 1
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "\n%d check(s) failed.\n", failed)
		return 1
	}
	fmt.Fprintln(stdout, "\nAll checks passed.")
	return 0
}
