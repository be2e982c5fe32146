// Command printgate is the store-side printing agent: it takes print tasks from
// the cloud and from POS terminals, keeps them in a durable spool and prints
// them on receipt printers. Each subcommand lives in its own file; main only
// dispatches, so the logic stays in packages that tests can reach.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
)

// command is one subcommand of printgate.
type command struct {
	summary string
	// run executes the subcommand with its own arguments and returns the
	// process exit code: 0 ok, 1 runtime error, 2 usage.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands is filled by the init functions of the subcommand files.
var commands = map[string]command{}

func register(name string, c command) { commands[name] = c }

// withSignals is the run of a command that stops cleanly (and says so) at
// Ctrl-C: cmd gets a context that ends at the first of sigs (os.Interrupt
// when none are given).
func withSignals(cmd func(ctx context.Context, args []string, stdout, stderr io.Writer) int, sigs ...os.Signal) func([]string, io.Writer, io.Writer) int {
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt}
	}
	return func(args []string, stdout, stderr io.Writer) int {
		ctx, stop := signal.NotifyContext(context.Background(), sigs...)
		defer stop()
		return cmd(ctx, args, stdout, stderr)
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "printgate: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: printgate <command> [arguments]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'printgate <command> --help' for a command's options.")
}

// parseFlags parses a command's flags and refuses positional arguments, the
// same way for every command: --help prints the usage and exits 0, a bad
// flag or an extra argument prints what is wrong and the usage and exits 2.
// done reports that the command must return code now.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "printgate %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return 2, true
	}
	return 0, false
}

// oneArg parses the flags of a command that takes one positional argument
// (TASK_NO, NAME) wherever it stands among them: "reprint X --config F"
// and "reprint --config F X" both work. It returns the argument ("" when
// absent); a second one is refused as parseFlags refuses one.
func oneArg(fs *flag.FlagSet, args []string, stderr io.Writer) (arg string, code int, done bool) {
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return "", code, true
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "printgate %s: unexpected argument %q\n", fs.Name(), pos[1])
		fs.Usage()
		return "", 2, true
	}
	if len(pos) == 1 {
		arg = pos[0]
	}
	return arg, 0, false
}
