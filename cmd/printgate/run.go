package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"printgate/agent/config"
	"printgate/agent/daemon"
	"printgate/cmd/printgate/internal/version"
)

func init() {
	register("run", command{summary: "run the agent in the foreground (what the service runs)", run: runRun})
}

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file`")
	asService := fs.Bool("service", false, "run as the Windows service, answering the service manager (the command line printgate install registers; Windows only)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate run [--config FILE]\n\nRuns the agent in the foreground until SIGINT or SIGTERM.")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	daemon.Version = version.Version
	if err := runAgent(ctx, *configPath, *asService, stderr); err != nil {
		var se *daemon.StartError
		if errors.As(err, &se) {
			fmt.Fprintf(stderr, "printgate run: %v\n", err) // its fix line included
			return 1
		}
		msg, fix := configFailure("run", *configPath, err)
		fmt.Fprintf(stderr, "printgate run: %s\nfix: %s\n", msg, fix)
		return 1
	}
	return 0
}
