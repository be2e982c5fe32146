package web

import (
	"io/fs"
	"strings"
	"testing"

	"printgate/drivers/escpos"
)

// TestWordsWrapWhole ensures no style of the page breaks words where no
// break is needed (an alert on a phone once read "ticke ts"):
// "word-break: break-all" splits every word at the edge, where
// "overflow-wrap: anywhere" wraps at spaces and breaks only a word longer
// than the line (a URL, a task_no).
func TestWordsWrapWhole(t *testing.T) {
	sheets := map[string]string{"paper.css": escpos.PaperCSS}
	err := fs.WalkDir(staticFS, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".css") {
			return err
		}
		b, err := fs.ReadFile(staticFS, path)
		sheets[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sheets) < 2 {
		t.Fatalf("found %d style sheets; is the scan broken?", len(sheets))
	}
	for name, css := range sheets {
		for i, line := range strings.Split(css, "\n") {
			if strings.Contains(strings.ReplaceAll(line, " ", ""), "word-break:break-all") {
				t.Errorf("%s:%d breaks words mid-word: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}
