package apispec_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"printgate/internal/apispec"
)

var update = flag.Bool("update", false, "rewrite agent/localapi/openapi.json and docs/ticket.schema.json from docs/openapi.yaml")

// TestGeneratedFilesCurrent keeps what is generated from docs/openapi.yaml
// identical to it: the JSON the binary serves and the published ticket
// schema. After editing the YAML: go test ./internal/apispec -run
// TestGeneratedFilesCurrent -update.
func TestGeneratedFilesCurrent(t *testing.T) {
	root, err := apispec.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, apispec.YAMLPath))
	if err != nil {
		t.Fatal(err)
	}
	served, err := apispec.YAMLToJSON(src)
	if err != nil {
		t.Fatal(err)
	}
	ticket, err := apispec.TicketSchema(served)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{apispec.ServedPath: served, apispec.TicketPath: ticket} {
		full := filepath.Join(root, path)
		if *update {
			if err := os.WriteFile(full, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(full)
		if err != nil {
			t.Fatalf("%v; run go test ./internal/apispec -run TestGeneratedFilesCurrent -update", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what %s makes; run go test ./internal/apispec -run TestGeneratedFilesCurrent -update", path, apispec.YAMLPath)
		}
	}
}

// TestLoad makes sure the descriptions load and validate as OpenAPI 3.1
// (kin-openapi's own checks; the npm linter is in lint_test.go).
func TestLoad(t *testing.T) {
	if _, err := apispec.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := apispec.LoadHub(); err != nil {
		t.Fatal(err)
	}
}
