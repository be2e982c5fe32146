package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/agent/web"
	"printgate/cmd/printgate/internal/console"
)

func init() {
	register("pin", command{summary: "set the manager PIN that the manager page asks for (pin set)", run: runPin})
}

// pinUsage is what `printgate pin` alone and `printgate pin --help` print.
const pinUsage = `usage: printgate pin set [--config FILE] [--pin-stdin]

Sets the manager PIN that the manager page (http://<listen>/) asks for,
replacing any PIN set before. On a terminal it asks for the PIN twice
without showing it; with --pin-stdin it reads one line from standard input
(for scripts: echo "$PIN" | printgate pin set --pin-stdin).
The PIN has 6 to 64 characters and does not start or end with a space.
Run it with sudo or as the service's account: the PIN file is given the
data dir's owner (the account the service runs as), so the agent reads it.
Exit codes: 0 set, 1 refused (PIN too short or too long, the two entries
differ, or it could not be saved), 2 usage.`

// pinEnv is where `pin set` reads the PIN from; tests replace it.
type pinEnv struct {
	// stdin is read by --pin-stdin.
	stdin io.Reader
	// terminal reports whether the PIN can be asked for on a terminal.
	terminal bool
	// readSecret shows prompt (on stderr) and reads one line from the
	// terminal without echoing it. Used only when terminal is set.
	readSecret func(prompt string) (string, error)
}

func runPin(args []string, stdout, stderr io.Writer) int {
	fd := int(os.Stdin.Fd())
	env := pinEnv{stdin: os.Stdin, terminal: term.IsTerminal(fd)}
	env.readSecret = func(prompt string) (string, error) { return console.ReadSecret(fd, prompt, stderr) }
	return pinCmd(env, args, stdout, stderr)
}

// pinCmd is `printgate pin <subcommand>`; set is the only one.
func pinCmd(env pinEnv, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, pinUsage)
		return 2
	}
	switch args[0] {
	case "set":
		return pinSet(env, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, pinUsage)
		return 0
	}
	fmt.Fprintf(stderr, "printgate pin: unknown subcommand %q\n\n%s\n", args[0], pinUsage)
	return 2
}

// pinSet is `printgate pin set [--config FILE] [--pin-stdin]`.
func pinSet(env pinEnv, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pin set", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file`; the PIN's hash goes in its data_dir")
	fromStdin := fs.Bool("pin-stdin", false, "read the PIN from one line of standard input instead of asking on the terminal")
	fs.Usage = func() {
		fmt.Fprintln(stderr, pinUsage)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	cfg, ok := loadConfig("pin set", *configPath, stderr)
	if !ok {
		return 1
	}

	pin, err := console.ReadPIN(console.PINInput{FromStdin: *fromStdin, Stdin: env.stdin,
		Terminal: env.terminal, ReadSecret: env.readSecret, Check: web.CheckPINFormat})
	if err != nil {
		fmt.Fprintf(stderr, "printgate pin set: %v\n", err)
		if errors.Is(err, console.ErrNoTerminal) {
			return 2
		}
		return 1
	}

	if err := web.SetPIN(cfg.DataDir, pin); err != nil {
		fmt.Fprintf(stderr, "printgate pin set: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Manager PIN set: its hash is in %s.\nThe manager page at %s/ now asks for it.\n", web.PINPath(cfg.DataDir), apiclient.URL(cfg))
	return 0
}
