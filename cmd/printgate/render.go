package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"printgate/drivers/escpos"
)

func init() {
	register("render", command{summary: "render a ticket document to ESC/POS bytes or a text preview", run: runRender})
}

// runRender is `printgate render DOC.json --profile NAME [--preview] [-o FILE]`:
// the renderer the agent uses, on its own, so an integrator can check a
// document before sending it ("-" reads the document from stdin).
func runRender(args []string, stdout, stderr io.Writer) int {
	return renderCmd(args, os.Stdin, stdout, stderr)
}

func renderCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("profile", "", "printer `profile`: "+strings.Join(escpos.ProfileNames(), ", "))
	preview := fs.Bool("preview", false, "write a text preview of the paper instead of ESC/POS bytes")
	out := fs.String("o", "", "write to `FILE` instead of stdout")
	reprint := fs.Bool("reprint", false, "add the REPRINT banner")
	dup := fs.Bool("possible-duplicate", false, "add the POSSIBLE DUPLICATE banner")
	failover := fs.String("failover", "", "add the failover banner, `FROM:TO` (e.g. kitchen:bar)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate render DOC.json --profile NAME [--preview] [-o FILE]")
		fs.PrintDefaults()
	}
	// Go's flag package stops at the first argument that is not a flag; allow
	// the document name anywhere, as the usage line shows it first.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
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

	var src []byte
	if pos[0] == "-" {
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(pos[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "printgate render: %v\n", err)
		return 1
	}
	doc, err := escpos.ParseDocument(src)
	if err != nil {
		fmt.Fprintf(stderr, "printgate render: %s: %v\n", pos[0], err)
		return 1
	}
	var result []byte
	if *preview {
		s, err := escpos.Preview(doc, p, opts)
		if err != nil {
			fmt.Fprintf(stderr, "printgate render: %s: %v\n", pos[0], err)
			return 1
		}
		result = []byte(s)
	} else if result, err = escpos.Render(doc, p, opts); err != nil {
		fmt.Fprintf(stderr, "printgate render: %s: %v\n", pos[0], err)
		return 1
	}
	if *out == "" {
		if _, err := stdout.Write(result); err != nil {
			fmt.Fprintf(stderr, "printgate render: %v\n", err)
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
