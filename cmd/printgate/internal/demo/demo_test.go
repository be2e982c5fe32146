package demo

import (
	"os"
	"path/filepath"
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
