package escpos

import (
	"fmt"
	"io"
	"os"
)

// StdinName is the document name that LoadDocument reads from its stdin
// argument instead of a file, as command-line tools spell it.
const StdinName = "-"

// LoadDocument reads and parses the ticket document (PROTOCOL.md §4) at
// path, or from stdin when path is StdinName. Errors name the file, and a
// document the parser refuses is reported with its line, so a person can
// find the mistake: "kitchen.json: line 3: qr size 20 out of range 1..16".
func LoadDocument(path string, stdin io.Reader) (*Document, error) {
	var (
		src []byte
		err error
	)
	if path == StdinName {
		if stdin == nil {
			return nil, fmt.Errorf("read document from stdin: no stdin")
		}
		if src, err = io.ReadAll(stdin); err != nil {
			return nil, fmt.Errorf("read document from stdin: %w", err)
		}
	} else if src, err = os.ReadFile(path); err != nil {
		// The *PathError already says "open PATH: ...".
		return nil, fmt.Errorf("read document: %w", err)
	}
	doc, err := ParseDocument(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// Output chooses what RenderFile produces.
type Output int

// The outputs of RenderFile.
const (
	// OutputESCPOS is the byte stream the printer gets (Render).
	OutputESCPOS Output = iota
	// OutputPreview is the text drawing of the paper (Preview), UTF-8.
	OutputPreview
)

// RenderFile loads the document at path (StdinName reads stdin) and renders
// it for profile p with the banners of opts: ESC/POS bytes exactly as the
// agent would send them, or the preview a manager sees. It is the whole of
// `printgate render` apart from flags and where the result goes. Errors
// name the document and, for render errors, its line.
func RenderFile(path string, stdin io.Reader, p Profile, opts RenderOptions, out Output) ([]byte, error) {
	doc, err := LoadDocument(path, stdin)
	if err != nil {
		return nil, err
	}
	switch out {
	case OutputPreview:
		s, err := Preview(doc, p, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return []byte(s), nil
	case OutputESCPOS:
		b, err := Render(doc, p, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("render %s: unknown output %d", path, out)
}
