package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"printgate/cmd/printgate/internal/console"
	"printgate/drivers/escpos"
)

func init() {
	register("render", command{summary: "render a ticket document to ESC/POS bytes or a text preview", run: runRender})
}

// renderEnv is what renderCmd reads from and asks about its output; tests
// replace it.
type renderEnv struct {
	stdin io.Reader
	// isTerminal reports whether w is a terminal, where raw ESC/POS bytes
	// would garble the screen instead of reaching a printer.
	isTerminal func(w io.Writer) bool
}

// runRender is `printgate render DOC.json --profile NAME [--preview] [-o FILE]`:
// the renderer the agent uses, on its own, so an integrator can check a
// document before sending it ("-" reads the document from stdin).
func runRender(args []string, stdout, stderr io.Writer) int {
	return renderCmd(renderEnv{stdin: os.Stdin, isTerminal: console.IsTerminal}, args, stdout, stderr)
}

func renderCmd(env renderEnv, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("profile", "", "printer `profile`: "+strings.Join(escpos.ProfileNames(), ", "))
	preview := fs.Bool("preview", false, "write a text preview of the paper instead of ESC/POS bytes")
	out := fs.String("o", "", "write to `FILE` instead of stdout (needed for ESC/POS bytes when stdout is a terminal)")
	reprint := fs.Bool("reprint", false, "add the REPRINT banner")
	dup := fs.Bool("possible-duplicate", false, "add the POSSIBLE DUPLICATE banner")
	failover := fs.String("failover", "", "add the failover banner, `FROM:TO` (e.g. kitchen:bar)")
	encoding := fs.String("encoding", "", "print text in this `encoding` instead of the profile's, as a printer's encoding override does: GB18030, Big5, Shift_JIS, PC437, PC850, PC858, PC866 or WPC1252")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate render DOC.json --profile NAME [--encoding NAME] [--preview] [-o FILE]")
		fs.PrintDefaults()
	}
	// Go's flag package stops at the first argument that is not a flag; allow
	// the document name anywhere, as the usage line shows it first.
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "printgate render: want exactly one document, got %d\n", len(pos))
		fs.Usage()
		return 2
	}
	if *profile == "" {
		fmt.Fprintln(stderr, "printgate render: --profile is required")
		fs.Usage()
		return 2
	}
	p, err := escpos.LookupProfile(*profile)
	if err == nil && *encoding != "" {
		p, err = p.With(escpos.ProfileOverrides{Encoding: encoding})
	}
	if err != nil {
		fmt.Fprintf(stderr, "printgate render: %v\n", err)
		return 2
	}
	opts := escpos.RenderOptions{Reprint: *reprint, PossibleDuplicate: *dup}
	if *failover != "" {
		from, to, ok := strings.Cut(*failover, ":")
		if !ok || from == "" || to == "" {
			fmt.Fprintf(stderr, "printgate render: --failover %q: want FROM:TO\n", *failover)
			return 2
		}
		opts.FailoverFrom, opts.FailoverTo = from, to
	}
	output := escpos.OutputESCPOS
	if *preview {
		output = escpos.OutputPreview
	}
	// Refuse before reading stdin: the person is at the keyboard.
	if output == escpos.OutputESCPOS && *out == "" && env.isTerminal != nil && env.isTerminal(stdout) {
		fmt.Fprintln(stderr, "printgate render: not writing raw ESC/POS bytes to a terminal: add --preview to see the ticket as text, or -o FILE to save the bytes (or redirect stdout)")
		return 2
	}

	result, err := escpos.RenderFile(pos[0], env.stdin, p, opts, output)
	if err != nil {
		fmt.Fprintf(stderr, "printgate render: %v\n", err)
		return 1
	}
	if *out == "" {
		if _, err := stdout.Write(result); err != nil {
			fmt.Fprintf(stderr, "printgate render: write stdout: %v\n", err)
			return 1
		}
		return 0
	}
	if err := os.WriteFile(*out, result, 0o644); err != nil {
		fmt.Fprintf(stderr, "printgate render: %v\n", err)
		return 1
	}
	return 0
}

// parseInterspersed parses fs over args allowing positional arguments
// anywhere among the flags (Go's flag package stops at the first one), and
// returns them in order. ok is false when the command should end with code:
// 0 after -h, 2 after a usage error (already printed by fs).
func parseInterspersed(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		if fs.NArg() == 0 {
			return pos, 0, true
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
