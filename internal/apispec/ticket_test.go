package apispec_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"printgate/drivers/escpos"
	"printgate/internal/apispec"
)

// ticketSchema compiles docs/ticket.schema.json as JSON Schema 2020-12 (the
// compiler checks it against the 2020-12 meta-schema first).
func ticketSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	root, err := apispec.Root()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, apispec.TicketPath))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", apispec.TicketPath, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(apispec.TicketSchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(apispec.TicketSchemaID)
	if err != nil {
		t.Fatalf("%s does not compile as JSON Schema 2020-12: %v", apispec.TicketPath, err)
	}
	return sch
}

// decode reads doc as the schema validators take JSON.
func decode(t *testing.T, doc []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("not JSON: %v: %s", err, doc)
	}
	return v
}

// goodDocuments are the ticket documents the project ships and shows: every
// JSON file under testdata/ that is a document, and the examples of
// PROTOCOL.md §4, by where they come from.
func goodDocuments(t *testing.T) map[string][]byte {
	t.Helper()
	root, err := apispec.Root()
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{}
	err = filepath.WalkDir(filepath.Join(root, "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(b, &top) == nil && top["lines"] != nil {
			rel, _ := filepath.Rel(root, path)
			docs[rel] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 5 {
		t.Fatalf("found %d ticket documents under testdata/, want the demo's and the golden ones", len(docs))
	}
	proto, err := os.ReadFile(filepath.Join(root, "docs/PROTOCOL.md"))
	if err != nil {
		t.Fatal(err)
	}
	// A small PNG stands in for the example's "<base64 PNG>".
	png := "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAAAAADhZOFXAAAAEklEQVR4nGNgYPjPwMDAwMAAAA0ABVyqgS8AAAAASUVORK5CYII="
	n := 0
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(proto, -1) {
		block := bytes.ReplaceAll(m[1], []byte("<base64 PNG>"), []byte(png))
		var top map[string]json.RawMessage
		if json.Unmarshal(block, &top) != nil || top["lines"] == nil {
			continue // not a document (or prose with comments)
		}
		n++
		docs["PROTOCOL.md example "+string(rune('0'+n))] = block
	}
	if n == 0 {
		t.Fatal("found no ticket document example in PROTOCOL.md")
	}
	return docs
}

// TestTicketDocumentsValidate: every document in testdata/ and every
// example of PROTOCOL.md validates against docs/ticket.schema.json and
// against the description's TicketDocument, and the agent's parser takes
// it: the schema does not refuse what the agent prints.
func TestTicketDocumentsValidate(t *testing.T) {
	sch := ticketSchema(t)
	spec, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range goodDocuments(t) {
		if err := sch.Validate(decode(t, doc)); err != nil {
			t.Errorf("%s does not validate against %s: %v", name, apispec.TicketPath, err)
		}
		if err := spec.ValidateSchema(apispec.TicketSchemaName, decode(t, doc)); err != nil {
			t.Errorf("%s does not validate against %s TicketDocument: %v", name, apispec.YAMLPath, err)
		}
		if _, err := escpos.ParseDocument(doc); err != nil {
			t.Errorf("the agent refuses %s: %v", name, err)
		}
	}
}

// wrongDocuments are documents the agent refuses, each for one reason the
// schema can see.
var wrongDocuments = map[string]string{
	"not an object":           `[]`,
	"no lines":                `{}`,
	"lines null":              `{"lines": null}`,
	"lines not an array":      `{"lines": {"text": "a"}}`,
	"no line":                 `{"lines": []}`,
	"a top key too many":      `{"lines": [{"text": "a"}], "width": 48}`,
	"a line not an object":    `{"lines": ["a"]}`,
	"a line of no kind":       `{"lines": [{"bold": true}]}`,
	"a line of two kinds":     `{"lines": [{"text": "a", "cut": "full"}]}`,
	"an unknown key":          `{"lines": [{"text": "a", "colour": "red"}]}`,
	"a key of another kind":   `{"lines": [{"qr": "x", "type": "CODE128"}]}`,
	"text null":               `{"lines": [{"text": null}]}`,
	"text a number":           `{"lines": [{"text": 12}]}`,
	"bold a string":           `{"lines": [{"text": "a", "bold": "yes"}]}`,
	"underline null":          `{"lines": [{"text": "a", "underline": null}]}`,
	"align unknown":           `{"lines": [{"text": "a", "align": "middle"}]}`,
	"size 9x9":                `{"lines": [{"text": "a", "size": "9x9"}]}`,
	"size 0x1":                `{"lines": [{"text": "a", "size": "0x1"}]}`,
	"size without x":          `{"lines": [{"text": "a", "size": "2"}]}`,
	"right with align center": `{"lines": [{"text": "a", "right": "x2", "align": "center"}]}`,
	"rule of two characters":  `{"lines": [{"rule": "-="}]}`,
	"rule empty":              `{"lines": [{"rule": ""}]}`,
	"rule a control byte":     `{"lines": [{"rule": "\u0007"}]}`,
	"qr empty":                `{"lines": [{"qr": ""}]}`,
	"qr size 0":               `{"lines": [{"qr": "x", "size": 0}]}`,
	"qr size 17":              `{"lines": [{"qr": "x", "size": 17}]}`,
	"qr size a string":        `{"lines": [{"qr": "x", "size": "6"}]}`,
	"qr size a fraction":      `{"lines": [{"qr": "x", "size": 2.5}]}`,
	"barcode type unknown":    `{"lines": [{"barcode": "123", "type": "QR"}]}`,
	"barcode empty":           `{"lines": [{"barcode": ""}]}`,
	"image not base64":        `{"lines": [{"image": "not base64!"}]}`,
	"feed 0":                  `{"lines": [{"feed": 0}]}`,
	"feed 256":                `{"lines": [{"feed": 256}]}`,
	"beep 0":                  `{"lines": [{"beep": 0}]}`,
	"beep 10":                 `{"lines": [{"beep": 10}]}`,
	"drawer false":            `{"lines": [{"drawer": false}]}`,
	"drawer a string":         `{"lines": [{"drawer": "true"}]}`,
	"cut unknown":             `{"lines": [{"cut": "half"}]}`,
	"cut true":                `{"lines": [{"cut": true}]}`,
}

// TestWrongTicketDocumentsRefusedByBoth: each wrong document is refused by
// docs/ticket.schema.json, by the description's TicketDocument and by the
// agent's parser (the one intake renders with): an integrator who
// validates against the schema learns what the agent would answer
// bad_document to.
func TestWrongTicketDocumentsRefusedByBoth(t *testing.T) {
	sch := ticketSchema(t)
	spec, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range wrongDocuments {
		v := decode(t, []byte(doc))
		if err := sch.Validate(v); err == nil {
			t.Errorf("%s: %s takes %s", name, apispec.TicketPath, doc)
		}
		if err := spec.ValidateSchema(apispec.TicketSchemaName, v); err == nil {
			t.Errorf("%s: %s TicketDocument takes %s", name, apispec.YAMLPath, doc)
		}
		if _, err := escpos.ParseDocument([]byte(doc)); err == nil {
			t.Errorf("%s: the agent takes %s", name, doc)
		}
	}
}

// TestProtocolAnswerExamples: the answer examples of PROTOCOL.md that are
// whole JSON (the reload result) validate against the description's
// schema for them, so the prose shows what the agent sends.
func TestProtocolAnswerExamples(t *testing.T) {
	root, err := apispec.Root()
	if err != nil {
		t.Fatal(err)
	}
	proto, err := os.ReadFile(filepath.Join(root, "docs/PROTOCOL.md"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	// The key that tells which answer a block shows.
	schemaOf := map[string]string{"applied": "ReloadResult"}
	n := 0
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(proto, -1) {
		var top map[string]json.RawMessage
		if json.Unmarshal(m[1], &top) != nil {
			continue
		}
		for key, schema := range schemaOf {
			if top[key] == nil {
				continue
			}
			n++
			if err := spec.ValidateSchema(schema, decode(t, m[1])); err != nil {
				t.Errorf("PROTOCOL.md's %s example does not validate: %v\n%s", schema, err, m[1])
			}
		}
	}
	if n == 0 {
		t.Fatal("found no answer example in PROTOCOL.md")
	}
}
