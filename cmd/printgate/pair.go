package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"time"

	"printgate/agent"
	"printgate/agent/config"
	"printgate/cmd/printgate/internal/screen"
	"printgate/internal/clock"
	"printgate/sync/pair"
)

func init() {
	register("pair", command{summary: "pair this agent with the cloud: shows a code and a QR for a manager to approve", run: runPair})
	register("unpair", command{summary: "forget the cloud pairing (removes the device token)", run: runUnpair})
}

// pairEnv is what pairCmd uses besides its arguments; tests replace it.
type pairEnv struct {
	// clock times the polls and the code's expiry.
	clock clock.Clock
	// client makes the requests to the cloud's auth_url.
	client *http.Client
}

func runPair(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	env := pairEnv{clock: clock.RealClock(), client: &http.Client{Timeout: 30 * time.Second}}
	return pairCmd(ctx, env, args, stdout, stderr)
}

// pairCmd is `printgate pair [--config FILE] [--print-qr PRINTER]`
// (PROTOCOL.md §6): it asks the cloud for a code, shows it with its QR
// (and prints them on a receipt printer if asked), waits for a manager to
// approve, and saves the device token in the data dir.
func pairCmd(ctx context.Context, env pairEnv, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file`; its [cloud] auth_url is where to pair")
	printQR := fs.String("print-qr", "", "also print the QR and the code on the configured `printer`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate pair [--config FILE] [--print-qr PRINTER]")
		fmt.Fprintln(stderr, "\nPairs this agent with the cloud: shows a code and a QR code, waits until a")
		fmt.Fprintln(stderr, "manager approves it in the cloud, and saves the device token in the data dir.")
		fmt.Fprintln(stderr, "Run it with sudo or as the service's account: the token file is given the data dir's owner, so the agent reads it.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	cfg, ok := loadConfig("pair", *configPath, stderr)
	if !ok {
		return 1
	}
	if cfg.Cloud == nil || cfg.Cloud.AuthURL == "" {
		fmt.Fprintf(stderr, "printgate pair: %s has no [cloud] table with an auth_url: add [cloud] with the url and auth_url the cloud gave you, then run printgate pair again\n", cfg.Path)
		return 1
	}
	var printer *config.Printer
	if *printQR != "" {
		var ok bool
		if printer, ok = cfg.Printer(*printQR); !ok {
			fmt.Fprintf(stderr, "printgate pair: --print-qr %q: %s has no such printer (it has %s)\n", *printQR, cfg.Path, screen.PrinterNames(cfg))
			return 2
		}
	}

	p, err := pair.StartClock(ctx, cfg.Cloud.AuthURL, env.client, env.clock)
	if err != nil {
		fmt.Fprintf(stderr, "printgate pair: %v\n", err)
		return 1
	}
	qr, err := pair.QRText(p.URL())
	if err != nil {
		fmt.Fprintf(stderr, "printgate pair: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "To pair this agent, a manager scans this QR code with a phone signed in to\nthe cloud, or opens %s and enters the code %s.\n\n", p.VerificationURI, p.UserCode)
	fmt.Fprint(stdout, qr)
	fmt.Fprintf(stdout, "\n  %s\n  code: %s\n\n", p.URL(), p.UserCode)
	if printer != nil {
		if err := agent.PrintPairing(ctx, printer, p); err != nil {
			// The terminal shows the same code: go on waiting.
			fmt.Fprintf(stderr, "printgate pair: could not print the code on %s: %v\n", printer.Name, err)
		} else {
			fmt.Fprintf(stdout, "Printed the QR code and the code on %s.\n", printer.Name)
		}
	}

	last := ""
	p.Progress = func(left time.Duration) {
		if s := screen.Left(left); s != last {
			last = s
			fmt.Fprintf(stdout, "waiting for approval… (expires in %s)\n", s)
		}
	}
	token, err := p.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "printgate pair: stopped before the pairing was approved; nothing was saved")
			return 1
		}
		fmt.Fprintf(stderr, "printgate pair: %v\n", err)
		return 1
	}
	if err := pair.Save(cfg.DataDir, token); err != nil {
		fmt.Fprintf(stderr, "printgate pair: approved, but %v; run printgate pair again as the service's account\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Paired. The device token is in %s; a running agent uses it when it next connects to the cloud.\n", pair.TokenPath(cfg.DataDir))
	return 0
}

func runUnpair(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("unpair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file`; the token is in its data_dir")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate unpair [--config FILE]")
		fmt.Fprintln(stderr, "\nForgets the cloud pairing: removes the device token from the data dir. A")
		fmt.Fprintln(stderr, "running agent keeps its open link until it next reconnects; the cloud keeps")
		fmt.Fprintln(stderr, "listing the agent until a manager removes it there.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	cfg, ok := loadConfig("unpair", *configPath, stderr)
	if !ok {
		return 1
	}
	path := pair.TokenPath(cfg.DataDir)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stdout, "Not paired: there is no device token at %s.\n", path)
		return 0
	}
	if err := pair.Remove(cfg.DataDir); err != nil {
		fmt.Fprintf(stderr, "printgate unpair: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Unpaired: removed %s.\n", path)
	return 0
}
