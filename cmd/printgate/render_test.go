package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kitchenDoc = "../../testdata/escpos/kitchen-zh.json"

func runRenderCmd(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = renderCmd(args, strings.NewReader(stdin), &out, &errb)
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
		{"", []string{"/does/not/exist.json", "--profile", "epson-80"}, 1, "no such file"},
		{`{"lines":[{"qr":"x","size":20}]}`, []string{"-", "--profile", "epson-80"}, 1, "-: line 1: qr size 20 out of range 1..16"},
		{`{"lines":[{"barcode":"ABCDEFGHIJKLMNOPQRSTUV","type":"CODE39"}]}`, []string{"-", "--profile", "epson-58"}, 1, "line 1: CODE39 barcode"},
	}
	for _, c := range cases {
		code, _, errs := runRenderCmd(c.stdin, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
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
