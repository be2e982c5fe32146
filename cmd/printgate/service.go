package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/agent/daemon"
	"printgate/agent/web"
	"printgate/cmd/printgate/internal/screen"
	"printgate/installer"
	"printgate/internal/portowner"
)

func init() {
	register("install", command{summary: "install printgate as a service; writes a config with the printers it finds when there is none", run: runInstall})
	register("uninstall", command{summary: "remove the printgate service (keeps the config and the spool)", run: runUninstall})
	register("start", command{summary: "start the printgate service", run: serviceAction("start")})
	register("stop", command{summary: "stop the printgate service", run: serviceAction("stop")})
	register("restart", command{summary: "restart the printgate service", run: serviceAction("restart")})
	register("status", command{summary: "show the service state and the agent's health: printers, cloud link, outbox", run: runStatus})
}

// serviceFlags are the flags of the commands that act on the installed
// service: the config names the service's agent (for status and the
// checks before start).
func serviceFlags(name, usage string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the service's config `file`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return fs, configPath
}

// serviceAction is start, stop or restart. Start and restart check the
// config first: a service started on a config the agent refuses would only
// fail and be restarted, with the reason buried in the journal.
func serviceAction(action string) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		fs, configPath := serviceFlags(action, fmt.Sprintf("usage: printgate %s [--config FILE]\n\n%s the installed printgate service.", action, capitalize(action)), stderr)
		if code, done := parseFlags(fs, args, stderr); done {
			return code
		}
		path, err := filepath.Abs(*configPath)
		if err != nil {
			fmt.Fprintf(stderr, "printgate %s: %v\n", action, err)
			return 1
		}
		if action != "stop" {
			if _, err := config.Load(path); err != nil {
				fmt.Fprintf(stderr, "printgate %s: the agent would refuse its config, so the service was not %s:\n%v\n", action, map[string]string{"start": "started", "restart": "restarted"}[action], err)
				return 1
			}
		}
		if why := installer.NoServiceManager(); why != "" {
			fix := "run the agent in the foreground instead: " + foregroundCommand(path) + ", or boot this machine with systemd"
			if action == "stop" {
				fix = stopByHandFix(path)
			}
			fmt.Fprintf(stderr, "printgate %s: the service was not %s: it needs systemd, and systemd is not running on this machine (a container or a chroot)\nfix: %s\n",
				action, map[string]string{"start": "started", "stop": "stopped", "restart": "restarted"}[action], fix)
			return 1
		}
		did, err := installer.Control(action, path)
		if err != nil {
			fmt.Fprintf(stderr, "printgate %s: %v\n", action, err)
			return 1
		}
		fmt.Fprintf(stdout, "printgate service: %s\n", did)
		return 0
	}
}

// foregroundCommand is how to run the agent of the config at path by
// hand, as the service's account when this machine has it, written for the
// shell this command runs in (runuser in a root shell, where sudo may be
// missing; sudo otherwise).
func foregroundCommand(path string) string {
	cmd := "printgate run --config " + path
	if _, err := user.Lookup(installer.ServiceUser); err == nil {
		return screen.ThisShell().AsService(cmd)
	}
	return cmd
}

// stopByHandFix is how to stop the agent of the config at path where no
// service manager runs it: the agent was started by hand, so it stops where
// it runs, and the process that holds its port is named when /proc says.
func stopByHandFix(path string) string {
	const where = "stop the agent where it runs (Ctrl-C in its terminal)"
	cfg, err := config.Load(path)
	if err != nil {
		return where
	}
	_, port, err := net.SplitHostPort(cfg.Listen)
	n, _ := strconv.Atoi(port)
	if err != nil || n <= 0 {
		return where
	}
	holder, found := portowner.Listening(n)
	switch {
	case found && holder.Name == "printgate":
		return fmt.Sprintf("%s, or: %s (the agent, %s, holds %s)", where, screen.ThisShell().Admin(fmt.Sprintf("kill %d", holder.PID)), holder, cfg.Listen)
	case found:
		return fmt.Sprintf("%s; %s holds %s, the config's listen address, and it is not printgate", where, holder, cfg.Listen)
	}
	return fmt.Sprintf("no agent holds %s, the config's listen address, so none of this config is running; an agent started by hand stops with Ctrl-C in its terminal", cfg.Listen)
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func runUninstall(args []string, stdout, stderr io.Writer) int {
	fs, configPath := serviceFlags("uninstall", "usage: printgate uninstall\n\nStops and removes the printgate service. The config, the spool and the log stay\n(on Linux /etc/printgate and /var/lib/printgate; on Windows %ProgramData%\\printgate):\ndelete them by hand to remove every trace.", stderr)
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	path, _ := filepath.Abs(*configPath)
	if err := installer.Uninstall(path, stdout); err != nil {
		fmt.Fprintf(stderr, "printgate uninstall: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "printgate service removed; the config and the spool are kept.")
	return 0
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs, configPath := serviceFlags("status", "usage: printgate status [--config FILE]\n\nShows the service's state and, from the running agent, its health, cloud link,\noutbox and each printer's state and queue. Exit code 0 when the agent answers\nand is ok, 1 otherwise.", stderr)
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	path, err := filepath.Abs(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "printgate status: %v\n", err)
		return 1
	}
	state := installer.StateOf(path)
	cfg, err := config.Load(path)
	var h screen.AgentHealth
	base := ""
	if err != nil {
		msg, fix := configFailure("status", path, err)
		h.Err, h.Fix = fmt.Errorf("cannot ask the agent: %s", msg), fix
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// The same client as every API command: the agent's own
		// certificate pinned when its listener has TLS.
		if c, err := apiclient.ForConfig(cfg, 5*time.Second); err != nil {
			h.Err = fmt.Errorf("cannot ask the agent: %w", err)
		} else {
			h = fetchAgentHealth(ctx, c)
			base = c.Base()
			if msg, fix, ok := tokenRefused(cfg, h.Err); ok {
				h.Err, h.Fix = errors.New(msg), fix
			} else if errors.Is(h.Err, apiclient.ErrAgentDown) {
				h.Fix = agentDownFix(cfg)
			} else if errors.Is(h.Err, apiclient.ErrAgentSilent) {
				h.Fix = agentSilentFix(cfg)
			}
		}
	}
	screen.Status(stdout, state, h)
	if h.Err == nil {
		// Only a running agent's code is current: each start makes a new one.
		showSetupCode(stdout, cfg.DataDir, base)
	}
	if h.Err != nil || h.Health.Status != "ok" {
		return 1
	}
	return 0
}

// showSetupCode prints the first-run setup code while no manager PIN is
// set, for the person at the PC to type into the page's setup form.
func showSetupCode(w io.Writer, dataDir, base string) {
	code, err := web.LoadSetupCode(dataDir)
	switch {
	case errors.Is(err, web.ErrNoSetupCode):
	case errors.Is(err, fs.ErrPermission):
		fmt.Fprintf(w, "setup     no manager PIN is set yet, and the first-run setup code in %s is readable only by the service's account: run printgate status as that account (root, Administrator), or set the PIN with printgate pin set\n", web.SetupCodePath(dataDir))
	case err != nil:
		fmt.Fprintf(w, "setup     no manager PIN is set yet, and the first-run setup code cannot be read: %v\n", err)
	default:
		fmt.Fprintf(w, "setup     first-run setup code: %s (open %s/setup on this PC and type it; no manager PIN is set yet)\n", code, base)
	}
}

// fetchAgentHealth asks the agent c talks to for /healthz and
// /api/v1/printers.
func fetchAgentHealth(ctx context.Context, c *apiclient.Client) screen.AgentHealth {
	h := screen.AgentHealth{URL: c.Base() + "/"}
	h.Health, h.Printers, h.Err = c.Status(ctx)
	return h
}

// runAgent is what `printgate run` runs: the agent in the foreground until
// ctx ends, or, as the Windows service (asService: the --service of the
// command line install registers; detection only as a fallback for older
// installs), the agent inside the SCM's service protocol (start, stop,
// event log), which ignores ctx because the SCM says when to stop.
func runAgent(ctx context.Context, configPath string, asService bool, stderr io.Writer) error {
	if asService || installer.UnderServiceManager() {
		return installer.RunUnderServiceManager(configPath, func(ctx context.Context) error {
			return daemon.RunService(ctx, configPath, io.Discard)
		})
	}
	return daemon.RunService(ctx, configPath, stderr)
}
