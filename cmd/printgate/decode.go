package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/agent/localapi"
	"printgate/drivers/escpos"
	"printgate/drivers/escpos/decode"
)

func init() {
	register("decode", command{summary: "show what a raw ESC/POS stream (a file or a task's payload) prints", run: runDecode})
}

// maxDecodeBytes caps the stream decode reads: far above any real ticket
// (the agent's default task limit is 1 MiB), low enough that a wrong file
// (a disk image, a video) is refused instead of being decoded for minutes.
const maxDecodeBytes = 16 << 20

// decodeUnknownBytes is how many bytes of each command not understood are
// shown in hex: enough to recognise the command, not a dump.
const decodeUnknownBytes = 16

const decodeUsage = `usage: printgate decode [--html] [--cjk] [--dbcs NAME] [--tables epson|xprinter] FILE|-
       printgate decode [--html] [--cjk] [--dbcs NAME] [--tables NAME] [--config FILE] --task TASK_NO

Shows what a raw ESC/POS stream prints, as the printer would read it: each
ticket drawn as text (or, with --html, the manager page's paper preview as a
standalone HTML page on stdout), what is left uncut, the commands the
decoder did not understand with their offsets, and whether the stream ends
in the middle of a command. "-" reads stdin. --tables is the printer
maker's numbering of ESC t code tables (ESC t 7 is Greek on an Xprinter,
nothing on an Epson). --dbcs is the encoding of the printer's Kanji mode
(FS &): GB18030 (mainland Chinese firmware, the default), Big5
(traditional Chinese) or Shift_JIS (Japanese). --task fetches the payload a
POS sent for that task from the running agent's local API (listen, tls and
api_token of the config); --cjk, --dbcs and --tables then default to that
printer's profile.`

// decodeEnv is what decodeCmd reads from; tests replace it.
type decodeEnv struct {
	stdin io.Reader
}

func runDecode(args []string, stdout, stderr io.Writer) int {
	return decodeCmd(context.Background(), decodeEnv{stdin: os.Stdin}, args, stdout, stderr)
}

// decodeCmd is `printgate decode`: support's view of "what exactly did the
// POS send", over the same decoder as the emulator and the manager page.
func decodeCmd(ctx context.Context, env decodeEnv, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asHTML := fs.Bool("html", false, "write a standalone HTML page with the paper preview instead of text")
	cjk := fs.Bool("cjk", false, "decode as a Chinese printer does at power-on (GB18030 text); with --task the default is the task's printer profile")
	tables := fs.String("tables", string(decode.TablesEpson), "the printer maker's ESC t numbering, `epson` or xprinter; with --task the default is the task's printer profile")
	dbcs := fs.String("dbcs", decode.GB18030.String(), "the `encoding` of the printer's Kanji mode: GB18030, Big5 or Shift_JIS")
	configPath := fs.String("config", config.DefaultConfigPath(), "with --task: the agent's config `file` (where its API listens, its api_token)")
	taskNo := fs.String("task", "", "decode the payload of task `TASK_NO`, fetched from the running agent")
	fs.Usage = func() {
		fmt.Fprintln(stderr, decodeUsage)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	// The file may come before or after the flags.
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *taskNo != "" && len(pos) > 0:
		fmt.Fprintln(stderr, "printgate decode: give a FILE or --task, not both")
		fs.Usage()
		return 2
	case *taskNo == "" && len(pos) != 1:
		fmt.Fprintf(stderr, "printgate decode: want exactly one FILE (or - for stdin, or --task TASK_NO), got %d\n", len(pos))
		fs.Usage()
		return 2
	case !validDBCS(*dbcs):
		fmt.Fprintf(stderr, "printgate decode: --dbcs %q: want GB18030, Big5 or Shift_JIS\n", *dbcs)
		return 2
	case !decode.KnownCodeTables(decode.CodeTables(*tables)):
		fmt.Fprintf(stderr, "printgate decode: --tables %q: want %q or %q\n", *tables, decode.TablesEpson, decode.TablesXprinter)
		return 2
	case *taskNo == "" && set["config"]:
		fmt.Fprintln(stderr, "printgate decode: --config is for --task; a FILE needs no agent")
		return 2
	}

	var (
		stream []byte
		name   string
		err    error
	)
	if *taskNo != "" {
		name = "task " + *taskNo
		var printer decode.Options
		stream, printer, err = fetchPayload(ctx, *configPath, *taskNo)
		if !set["cjk"] {
			*cjk = printer.PowerOnCJK
		}
		if !set["dbcs"] {
			*dbcs = printer.DoubleByte.String()
		}
		if !set["tables"] && printer.CodeTables != "" {
			*tables = string(printer.CodeTables)
		}
	} else {
		name = pos[0]
		stream, err = readStream(pos[0], env.stdin)
	}
	if err != nil {
		fmt.Fprintf(stderr, "printgate decode: %v\n", err)
		return 1
	}

	dbl, _ := decode.ParseDoubleByte(*dbcs)
	o := decode.Options{PowerOnCJK: *cjk, DoubleByte: dbl, CodeTables: decode.CodeTables(*tables)}
	var out strings.Builder
	if *asHTML {
		writeDecodeHTML(&out, name, stream, o)
	} else {
		writeDecodeText(&out, stream, o)
	}
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		fmt.Fprintf(stderr, "printgate decode: write stdout: %v\n", err)
		return 1
	}
	return 0
}

// readStream reads the whole stream from path ("-" is stdin), refusing one
// over maxDecodeBytes.
func readStream(path string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	what := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory, not an ESC/POS stream", path)
		}
		r, what = f, path
	}
	if r == nil {
		return nil, errors.New("no stdin to read")
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDecodeBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if len(b) > maxDecodeBytes {
		return nil, fmt.Errorf("%s is over %d MiB: too big for a print job; is it the right file?", what, maxDecodeBytes>>20)
	}
	return b, nil
}

// validDBCS reports whether --dbcs names an encoding the decoder has.
func validDBCS(s string) bool {
	_, err := decode.ParseDoubleByte(s)
	return err == nil
}

// fetchPayload asks the agent of the config at configPath for taskNo's raw
// payload (GET /api/v1/tasks/{task_no}/payload), and how the task's
// printer reads a stream (its profile's power-on mode and ESC t numbering).
func fetchPayload(ctx context.Context, configPath, taskNo string) ([]byte, decode.Options, error) {
	var none decode.Options
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, none, err
	}
	c, err := apiclient.ForConfig(cfg, 30*time.Second)
	if err != nil {
		return nil, none, err
	}
	t, err := c.Task(ctx, url.PathEscape(taskNo))
	if err != nil {
		return nil, none, fmt.Errorf("task %s: %w", taskNo, err)
	}
	var printer decode.Options
	if p, ok := cfg.Printer(t.Printer); ok {
		printer = p.Profile.DecodeOptions()
	}
	path := "/api/v1/tasks/" + url.PathEscape(taskNo) + "/payload"
	resp, err := c.Open(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, none, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDecodeBytes+1))
	if err != nil {
		return nil, none, fmt.Errorf("read the payload of task %s: %w", taskNo, err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(body, &eb)
		switch eb.Error.Code {
		case localapi.CodeNoPayload:
			return nil, none, fmt.Errorf("task %s was submitted as a ticket document, not raw ESC/POS bytes; `printgate render DOC.json --profile NAME --preview` previews documents", taskNo)
		case "":
			if resp.StatusCode == http.StatusNotFound {
				return nil, none, fmt.Errorf("the agent at %s has no payload route (GET %s answered 404): it is older than this printgate", c.Base(), path)
			}
		}
		return nil, none, fmt.Errorf("task %s: %w", taskNo, &apiclient.Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message})
	}
	if len(body) > maxDecodeBytes {
		return nil, none, fmt.Errorf("the payload of task %s is over %d MiB", taskNo, maxDecodeBytes>>20)
	}
	return body, printer, nil
}

// writeDecodeText draws each cut ticket as the emulator draws it, then the
// part left uncut, then what the decoder did not understand.
func writeDecodeText(w *strings.Builder, stream []byte, o decode.Options) {
	tickets, pending, incomplete := decode.DecodeWith(stream, o)
	fmt.Fprintf(w, "%d bytes, %d ticket(s) cut\n", len(stream), len(tickets))
	for i, t := range tickets {
		sheet(t, i+1).Draw(w, "ticket")
	}
	hasPending := len(pending.Items) > 0
	if hasPending {
		var b strings.Builder
		sheet(pending, len(tickets)+1).Draw(&b, "not cut")
		// The emulator's box ends in its cut; this paper was not cut.
		s := b.String()
		if i := strings.LastIndex(s, "────[CUT]┘"); i >= 0 {
			s = s[:i] + "[NOT CUT]┘" + s[i+len("────[CUT]┘"):]
		}
		w.WriteString(s)
	} else if len(tickets) == 0 {
		w.WriteString("nothing printed\n")
	}
	feeds := pending.FeedsDropped
	for _, t := range tickets {
		feeds += t.FeedsDropped
	}
	if feeds > 0 {
		fmt.Fprintf(w, "(%d blank feed rows not drawn)\n", feeds)
	}

	var unknown []decode.Unknown
	truncated := pending.Unknown != nil && len(pending.Unknown) >= decode.MaxUnknown
	for _, t := range tickets {
		unknown = append(unknown, t.Unknown...)
		truncated = truncated || len(t.Unknown) >= decode.MaxUnknown
	}
	unknown = append(unknown, pending.Unknown...)
	w.WriteString("\nnot understood:\n")
	if len(unknown) == 0 {
		w.WriteString("  nothing\n")
	}
	for _, u := range unknown {
		end := min(u.Offset+int64(min(u.Len, decodeUnknownBytes)), int64(len(stream)))
		first := ""
		if u.Offset >= 0 && u.Offset < end {
			first = hexBytes(stream[u.Offset:end])
			if int64(u.Len) > end-u.Offset {
				first += " …"
			}
		}
		fmt.Fprintf(w, "  offset 0x%06x (%d), %d bytes: %s\n", u.Offset, u.Offset, u.Len, first)
	}
	if truncated {
		fmt.Fprintf(w, "  (the decoder keeps at most %d per ticket; there may be more)\n", decode.MaxUnknown)
	}
	if incomplete > 0 {
		off := len(stream) - incomplete
		fmt.Fprintf(w, "the stream ends in the middle of a command (offset 0x%06x (%d): %s): the printer would take the next job's first bytes as its arguments\n",
			off, off, hexBytes(stream[off:min(len(stream), off+decodeUnknownBytes)]))
	} else {
		w.WriteString("the stream ends between commands: the printer is ready for the next job\n")
	}
}

// hexBytes is b as space-separated hex pairs.
func hexBytes(b []byte) string {
	var sb strings.Builder
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(hex.EncodeToString([]byte{c}))
	}
	return sb.String()
}

// sheet is t as the emulator records it, numbered seq, so that decode
// draws exactly what the emulated printers draw.
func sheet(t decode.Ticket, seq int) decode.Sheet {
	s := t.Sheet()
	s.Seq = seq
	return s
}

// writeDecodeHTML writes a standalone page: the manager page's paper
// preview of the stream with its stylesheet, then the text report's list
// of what was not understood.
func writeDecodeHTML(w *strings.Builder, name string, stream []byte, o decode.Options) {
	var report strings.Builder
	writeDecodeText(&report, stream, o)
	notes := report.String()
	if i := strings.Index(notes, "\nnot understood:\n"); i >= 0 {
		notes = notes[i+1:]
	}
	fmt.Fprintf(w, `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>printgate decode: %s</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5rem; background: #eee; }
pre.decode-notes { background: #fff; padding: .75rem; overflow-x: auto; }
%s
</style>
</head>
<body>
<h1>%s</h1>
%s
<pre class="decode-notes">%s</pre>
</body>
</html>
`, html.EscapeString(name), escpos.PaperCSS, html.EscapeString(name), escpos.PreviewStreamHTML(stream, o), html.EscapeString(notes))
}
