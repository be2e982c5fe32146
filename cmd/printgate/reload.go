package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/cmd/printgate/internal/screen"
)

func init() {
	register("reload", command{summary: "make the running agent re-read its config: printers added, changed, removed (through the local API)", run: withSignals(reloadCmd)})
}

// reloadTimeout bounds the wait for the agent's answer: a changed or
// removed printer's job in flight finishes (completion barrier included)
// before the reload answers.
const reloadTimeout = 2 * time.Minute

// reloadCmd is `printgate reload [--config FILE]`: POST /api/v1/reload. It
// prints what changed, or the config's errors (exit 1) when the agent
// refused the file and kept its running config.
func reloadCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file` of the agent to reload")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate reload [--config FILE]")
		fmt.Fprintln(stderr, "\nAsks the running agent to read its config file again. New and changed")
		fmt.Fprintln(stderr, "printers take effect at once; a removed printer's waiting tasks go to its")
		fmt.Fprintln(stderr, "backup or wait for a manager. A file with errors is refused and the agent")
		fmt.Fprintln(stderr, "keeps running with the config it has. Sending SIGHUP to the agent does the same.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		// The file is what the agent would read: show its errors here, and
		// leave the agent alone (it keeps its running config).
		fmt.Fprintf(stderr, "printgate reload: the config has errors; nothing was reloaded, the agent keeps its running config:\n%v\n", err)
		return 1
	}
	c, err := apiclient.ForConfig(cfg, reloadTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "printgate reload: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, reloadTimeout)
	defer cancel()
	res, err := c.Reload(ctx)
	var refused *apiclient.ReloadRefused
	switch {
	case errors.As(err, &refused):
		fmt.Fprintf(stderr, "printgate reload: the agent refused %s and keeps its running config:\n", refused.Result.Config)
		for _, e := range refused.Result.Errors {
			fmt.Fprintf(stderr, "  %s\n", e)
		}
		return 1
	case err != nil:
		apiFailed(stderr, "reload", "", cfg, err)
		return 1
	}
	screen.Reload(stdout, res)
	return 0
}
