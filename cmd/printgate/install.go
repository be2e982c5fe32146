package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"time"

	"printgate/agent/config"
	"printgate/cmd/printgate/internal/console"
	"printgate/cmd/printgate/internal/screen"
	"printgate/cmd/printgate/internal/setup"
	"printgate/drivers"
	"printgate/installer"
)

// installEnv is what installCmd uses besides its arguments: the config
// step's machine and terminal, and the service steps. Tests leave the
// service steps out.
type installEnv struct {
	setup.Env
	// service registers the service for the config; nil leaves it out
	// (tests, --config-only).
	service func(configPath string, cfg *config.Config, stdout io.Writer) error
}

func defaultInstallEnv() installEnv {
	return installEnv{
		Env: setup.Env{
			GOOS:        runtime.GOOS,
			Stdin:       os.Stdin,
			Interactive: console.IsTerminal(os.Stdin), // a console, not /dev/null
			Serial:      drivers.DiscoverSerial,
			USB:         drivers.DiscoverUSB,
			Networks: func() ([]string, error) {
				p, err := installer.InterfacePrefixes()
				if err != nil {
					return nil, err
				}
				return installer.LocalNetworks(p), nil
			},
			Scan:        drivers.ScanTCP,
			ScanPort:    drivers.DefaultTCPPort,
			ScanTimeout: 300 * time.Millisecond,
			ScanBudget:  30 * time.Second,
		},
		service: installService,
	}
}

func runInstall(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return installCmd(ctx, defaultInstallEnv(), args, stdout, stderr)
}

const installUsage = `usage: printgate install [--config FILE] [--yes] [--no-discover] [--config-only]

Installs printgate as a service that starts with the computer and restarts
when it fails (Linux: a sandboxed systemd unit running as the printgate user;
Windows: an automatic service with recovery actions). When no config exists
at FILE, it first looks for printers (USB, serial ports and port 9100 on this
PC's own network), offers each one, and writes a commented config with a new
API token. An existing config is never replaced; one without printers (the
package's default) gets the printers chosen added at its end.`

func installCmd(ctx context.Context, env installEnv, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file` the service runs with")
	yes := fs.Bool("yes", false, "add every printer found without asking (serial ports only with a USB identity)")
	noDiscover := fs.Bool("no-discover", false, "do not look for printers; the config gets a commented example instead")
	configOnly := fs.Bool("config-only", false, "write the config and stop: do not register the service")
	fs.Usage = func() {
		fmt.Fprintln(stderr, installUsage)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	path, err := filepath.Abs(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "printgate install: %v\n", err)
		return 1
	}
	register := env.service
	if *configOnly {
		register = nil
	}
	if register != nil {
		err := installer.PrepareInstall(path, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "printgate install: %v\n", err)
			return 1
		}
	}

	if err := setup.WriteConfig(ctx, env.Env, path, *yes, *noDiscover, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "printgate install: %v\n", err)
		return 1
	}
	cfg, cfgErr := config.Load(path)
	if register != nil {
		if err := register(path, cfg, stdout); err != nil {
			fmt.Fprintf(stderr, "printgate install: %v%s\n", err, installer.AdminHintFor(err))
			return 1
		}
	}
	if cfgErr != nil {
		fmt.Fprintf(stdout, "\nThe agent will not start until its config is fixed:\n%v\n", cfgErr)
	} else if len(cfg.Printers) == 0 {
		fmt.Fprintf(stdout, "\nNo printer is configured yet: the agent starts and serves its page, but prints nothing until one is added (the page's Printers page, or a [[printers]] table in %s, then printgate reload).\n", path)
	}
	// Without a service manager (a container) the agent runs by hand.
	screen.NextSteps(stdout, screen.Shell{GOOS: env.GOOS, Root: screen.ThisShell().Root}, path, cfg, register != nil && installer.NoServiceManager() == "")
	return 0
}

// installService is the service part of install on a real machine.
func installService(configPath string, cfg *config.Config, stdout io.Writer) error {
	dirs := installer.ServiceDirs{Config: configPath}
	if cfg != nil {
		dirs.DataDir, dirs.TokenFile = cfg.DataDir, cfg.APITokenFile
	}
	return installer.InstallService(dirs, stdout)
}
