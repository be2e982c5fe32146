package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"printgate/cmd/printgate/internal/console"
	"printgate/drivers/escpos/decode"
	"printgate/drivers/printertest"
)

const kitchenDoc = "../../testdata/escpos/kitchen-zh.json"

func runRenderCmd(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = renderCmd(renderEnv{stdin: strings.NewReader(stdin), isTerminal: console.IsTerminal}, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestRenderCommandBytes ensures `render DOC --profile` writes exactly the
// golden ESC/POS stream, with flags before or after the document.
func TestRenderCommandBytes(t *testing.T) {
	want, err := os.ReadFile("../../testdata/escpos/kitchen-zh.xprinter-80.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{kitchenDoc, "--profile", "xprinter-80"},
		{"--profile", "xprinter-80", kitchenDoc},
	} {
		code, out, errs := runRenderCmd("", args...)
		if code != 0 || out != string(want) {
			t.Errorf("%v: exit %d, %d bytes (want %d), stderr %q", args, code, len(out), len(want), errs)
		}
	}
}

// TestRenderCommandPreviewAndFile ensures --preview writes the preview, -o
// writes to a file, "-" reads stdin, and banners are passed through.
func TestRenderCommandPreviewAndFile(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "out.txt")
	code, out, errs := runRenderCmd(`{"lines":[{"text":"hello","align":"center"}]}`,
		"-", "--profile", "epson-58", "--preview", "--failover", "kitchen:bar", "-o", dst)
	if code != 0 || out != "" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errs)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, strings.Repeat(" ", 13)+"hello"+strings.Repeat(" ", 14)+"\n") || !strings.Contains(s, "F A I L O V E R") || !strings.Contains(s, "✂") {
		t.Errorf("preview:\n%s", s)
	}
}

// TestRenderCommandEncoding ensures --encoding renders for a printer whose
// encoding is overridden: Big5 text in Kanji mode, which an emulated Big5
// printer prints, with the banner in traditional Chinese.
func TestRenderCommandEncoding(t *testing.T) {
	doc := `{"lines":[{"text":"牛肉麵 x2"}]}`
	code, out, errs := runRenderCmd(doc, "-", "--profile", "xprinter-80", "--encoding", "Big5", "--reprint")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	tk, _ := printertest.ParseWith([]byte(out), decode.Options{DoubleByte: decode.Big5})
	if len(tk) != 1 || !tk[0].Contains("牛肉麵 x2") || !tk[0].Contains("補印") {
		t.Errorf("a Big5 printer printed %d tickets:\n%v", len(tk), tk)
	}
}

// TestRenderCommandErrors ensures usage mistakes exit 2 and documents that
// cannot render exit 1 with the line named.
func TestRenderCommandErrors(t *testing.T) {
	cases := []struct {
		stdin string
		args  []string
		code  int
		msg   string
	}{
		{"", []string{kitchenDoc}, 2, "--profile is required"},
		{"", []string{"--profile", "epson-80"}, 2, "want exactly one document, got 0"},
		{"", []string{"a.json", "b.json", "--profile", "epson-80"}, 2, "got 2"},
		{"", []string{kitchenDoc, "--profile", "nope"}, 2, "known: epson-58, epson-80"},
		{"", []string{kitchenDoc, "--profile", "epson-80", "--failover", "kitchen"}, 2, "want FROM:TO"},
		{"", []string{kitchenDoc, "--bogus"}, 2, "flag provided but not defined"},
		{"", []string{kitchenDoc, "--profile", "xprinter-80", "--encoding", "EUC-KR"}, 2, `unknown encoding "EUC-KR"`},
		{"", []string{"/does/not/exist.json", "--profile", "epson-80"}, 1, notFoundText},
		{`{"lines":[{"qr":"x","size":20}]}`, []string{"-", "--profile", "epson-80"}, 1, "-: line 1: qr size 20 out of range 1..16"},
		{`{"lines":[{"barcode":"ABCDEFGHIJKLMNOPQRSTUV","type":"CODE39"}]}`, []string{"-", "--profile", "epson-58"}, 1, "line 1: CODE39 barcode"},
	}
	for _, c := range cases {
		code, _, errs := runRenderCmd(c.stdin, c.args...)
		says := strings.Contains(errs, c.msg) || (c.msg == notFoundText && saysNotFound(errs))
		if code != c.code || !says {
			t.Errorf("%v: exit %d stderr %q, want exit %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
	if code, _, _ := runRenderCmd("", "--help"); code != 0 {
		t.Errorf("--help exit %d, want 0", code)
	}
}

// TestRenderRegistered ensures the subcommand is reachable from main.
func TestRenderRegistered(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"render", "--help"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "--profile NAME") {
		t.Errorf("dispatch render --help: exit %d, stderr %q", code, errb.String())
	}
}

// failReader fails the test when read: the command must refuse before it
// waits for a document on stdin.
type failReader struct{ t *testing.T }

func (r failReader) Read([]byte) (int, error) {
	r.t.Error("stdin was read")
	return 0, io.EOF
}

// TestRenderRefusesTerminal ensures raw ESC/POS bytes are never written to
// a terminal stdout: the command exits 2 before reading the document, says
// why and suggests --preview and -o; a preview, or the bytes to -o, still
// go through on a terminal.
func TestRenderRefusesTerminal(t *testing.T) {
	term := func(io.Writer) bool { return true }
	var out, errb bytes.Buffer
	code := renderCmd(renderEnv{stdin: failReader{t}, isTerminal: term}, []string{"-", "--profile", "epson-80"}, &out, &errb)
	if code != 2 || out.Len() != 0 {
		t.Errorf("exit %d with %d bytes on the terminal, want exit 2 and none", code, out.Len())
	}
	for _, want := range []string{"not writing raw ESC/POS bytes to a terminal", "--preview", "-o FILE"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}

	out.Reset()
	errb.Reset()
	code = renderCmd(renderEnv{stdin: strings.NewReader(`{"lines":[{"text":"hello"}]}`), isTerminal: term}, []string{"-", "--profile", "epson-80", "--preview"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "hello") {
		t.Errorf("--preview on a terminal: exit %d stdout %q stderr %q", code, out.String(), errb.String())
	}

	dst := filepath.Join(t.TempDir(), "out.bin")
	out.Reset()
	errb.Reset()
	code = renderCmd(renderEnv{stdin: strings.NewReader(`{"lines":[{"text":"hello"}]}`), isTerminal: term}, []string{"-", "--profile", "epson-80", "-o", dst}, &out, &errb)
	if b, _ := os.ReadFile(dst); code != 0 || !bytes.Contains(b, []byte("hello")) || out.Len() != 0 {
		t.Errorf("-o on a terminal: exit %d, file %q, stdout %q, stderr %q", code, b, out.String(), errb.String())
	}
}

// TestRenderRealStdout ensures the command as dispatched from main writes
// the bytes into a pipe and refuses a terminal (a pty on Linux, which here
// is an emulated printer that must receive nothing).
func TestRenderRealStdout(t *testing.T) {
	want, err := os.ReadFile("../../testdata/escpos/kitchen-zh.xprinter-80.bin")
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(r); got <- b }()
	var errb bytes.Buffer
	code := dispatch([]string{"render", kitchenDoc, "--profile", "xprinter-80"}, w, &errb)
	w.Close()
	if b := <-got; code != 0 || !bytes.Equal(b, want) {
		t.Errorf("pipe: exit %d, %d bytes (want %d), stderr %q", code, len(b), len(want), errb.String())
	}

	if runtime.GOOS != "linux" {
		return
	}
	p := printertest.New(printertest.Options{})
	defer p.Close()
	path, err := p.OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	errb.Reset()
	if code := dispatch([]string{"render", kitchenDoc, "--profile", "xprinter-80"}, tty, &errb); code != 2 || !strings.Contains(errb.String(), "--preview") {
		t.Errorf("pty: exit %d stderr %q, want 2 and a hint", code, errb.String())
	}
	if n := p.Received(); n != 0 {
		t.Errorf("the terminal received %d bytes", n)
	}
}
