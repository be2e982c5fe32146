package demo

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestDemoFilesMatchTestdata ensures the documents and config compiled into
// the demo are the ones in testdata/demo, so the files people read are the
// ones the demo sends.
func TestDemoFilesMatchTestdata(t *testing.T) {
	for file, inBinary := range map[string]string{
		"kitchen-zh.json":   demoKitchenZH,
		"bar-zh.json":       demoBarZH,
		"receipt-en.json":   demoReceiptEN,
		"front.json":        demoFront,
		"small.json":        demoSmall,
		"task.json":         demoTask,
		"printgate.toml.in": demoConfig,
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "demo", file))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != inBinary {
			t.Errorf("testdata/demo/%s differs from its copy in demo.go", file)
		}
	}
}

// TestCurlHintWorksWhenPasted ensures the closing hint names a file that
// exists where it is pasted (it once named ticket.json, which did not
// exist): from the repository's root, testdata/demo/task.json; run
// anywhere else, the copy the demo writes in its directory.
func TestCurlHintWorksWhenPasted(t *testing.T) {
	d := New(io.Discard)
	d.dir, d.apiToken, d.pageURL = t.TempDir(), "TOKEN", "http://127.0.0.1:8631/"
	hintFile := regexp.MustCompile(` --data-binary @(\S+) `)

	t.Chdir(filepath.Join("..", "..", "..", ".."))
	m := hintFile.FindStringSubmatch(d.curlHint())
	if m == nil || m[1] != demoTaskFile {
		t.Fatalf("from the repository's root the hint names %v, want %s", m, demoTaskFile)
	}
	if _, err := os.Stat(m[1]); err != nil {
		t.Errorf("the hint's file: %v", err)
	}

	t.Chdir(t.TempDir())
	m = hintFile.FindStringSubmatch(d.curlHint())
	if m == nil || !filepath.IsAbs(m[1]) {
		t.Fatalf("elsewhere the hint names %v, want the demo's copy", m)
	}
	if b, err := os.ReadFile(m[1]); err != nil || string(b) != demoTask {
		t.Errorf("the demo's copy %s: %v", m[1], err)
	}
}
