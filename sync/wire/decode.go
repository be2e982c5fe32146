package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// maxDepth bounds how deeply a frame may nest objects and arrays. The
// deepest legitimate frame is a job's document: frame, document, lines,
// line, at depth 4.
const maxDepth = 32

// Decode reads one frame into the Message its "type" names, or refuses it
// with a *FrameError (see the package doc for what is refused). A job's
// document is kept compacted. Decode never panics and holds no reference
// to frame after it returns.
func Decode(frame []byte) (Message, error) {
	m, fe := decode(frame)
	if fe != nil {
		return nil, fmt.Errorf("decode: %w", fe)
	}
	return m, nil
}

func decode(frame []byte) (Message, *FrameError) {
	if len(frame) > MaxFrameBytes {
		fe := &FrameError{Code: CodeTooLarge, Reason: fmt.Sprintf("is %d bytes, over the %d byte limit", len(frame), MaxFrameBytes)}
		if len(frame) <= ReadLimit {
			// Read within the margin: learn the type and a job's task_no,
			// so the agent can answer the job rather than only the frame.
			sc, _ := scan(frame)
			fe = sc.blame(fe)
		}
		return nil, fe
	}
	sc, fe := scan(frame)
	if fe != nil {
		return nil, sc.blame(fe)
	}
	mk, known := newMessage[sc.typ]
	switch {
	case !sc.typeSeen:
		return nil, &FrameError{Code: CodeUnknownType, Field: "type", Reason: "is required; the types are " + strings.Join(Types(), ", ")}
	case !known:
		return nil, &FrameError{Code: CodeUnknownType, Field: "type", Reason: fmt.Sprintf("%s is not a message type; the types are %s", quote(sc.typ), strings.Join(Types(), ", "))}
	}
	s := schemas[sc.typ]
	for _, k := range sc.keys {
		if known, ok := s.has(k.schema, k.key); ok && !known {
			return nil, sc.blame(&FrameError{Code: CodeUnknownField, Field: join(k.display, k.key),
				Reason: fmt.Sprintf("is not a field of %s; the fields are %s", where(sc.typ, k.display), strings.Join(s[k.schema], ", "))})
		}
	}

	m := mk()
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.DisallowUnknownFields() // the scan checked already; kept as a second guard
	if err := dec.Decode(m.frame()); err != nil {
		return nil, sc.blame(decodeError(err, m))
	}
	if j, ok := m.(*Job); ok && j.Document != nil {
		var buf bytes.Buffer
		if err := json.Compact(&buf, j.Document); err != nil {
			return nil, sc.blame(&FrameError{Code: CodeBadJSON, Field: "document", Reason: "is not valid JSON", Err: err})
		}
		j.Document = buf.Bytes()
	}
	if p, ok := m.(interface{ present() *FrameError }); ok {
		// A required list that may be empty: missing is not empty.
		if fe := p.present(); fe != nil {
			return nil, sc.blame(fe)
		}
	}
	if fe := m.check(); fe != nil {
		return nil, sc.blame(fe)
	}
	return m, nil
}

// where names an object for an error: "the job frame", "events[2] of the
// events frame".
func where(typ, display string) string {
	if display == "" {
		return "the " + typ + " frame"
	}
	return display + " of the " + typ + " frame"
}

// decodeError explains an encoding/json error decoding m in the peer's
// terms. The scan has refused syntax errors, nulls and unknown keys, so
// what is left is a value of the wrong JSON type, bad base64 or a bad time.
func decodeError(err error, m Message) *FrameError {
	var (
		typ     *json.UnmarshalTypeError
		syn     *json.SyntaxError
		b64     base64.CorruptInputError
		timeErr *time.ParseError
	)
	switch {
	case errors.As(err, &typ):
		if typ.Field == "" {
			return &FrameError{Code: CodeBadJSON, Reason: "must be a JSON object, not " + typ.Value, Err: err}
		}
		// The path starts with the Go name of the message embedded in
		// its frame wrapper ("Events.events.n"); the peer knows "events.n".
		field := strings.TrimPrefix(typ.Field, reflect.TypeOf(m).Elem().Name()+".")
		return &FrameError{Code: CodeBadJSON, Field: field, Reason: fmt.Sprintf("must be %s, not %s", jsonKind(typ), typ.Value), Err: err}
	case errors.As(err, &b64):
		return &FrameError{Code: CodeInvalid, Field: "payload", Reason: fmt.Sprintf("is not valid base64 (standard alphabet, padded): bad data at byte %d", int64(b64)), Err: err}
	case errors.As(err, &timeErr):
		return &FrameError{Code: CodeBadJSON, Reason: fmt.Sprintf("a time is not RFC 3339 like \"2026-11-30T12:00:00Z\": %s", quote(timeErr.Value)), Err: err}
	case errors.As(err, &syn):
		return &FrameError{Code: CodeBadJSON, Reason: fmt.Sprintf("is not valid JSON at byte %d: %v", syn.Offset, syn), Err: err}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this one.
		return &FrameError{Code: CodeUnknownField, Reason: strings.TrimPrefix(err.Error(), "json: ") + " in the frame", Err: err}
	}
	return &FrameError{Code: CodeBadJSON, Reason: err.Error(), Err: err}
}

// jsonKind names the JSON kind a Go type takes.
func jsonKind(e *json.UnmarshalTypeError) string {
	if e.Type == nil {
		return "another JSON type"
	}
	switch e.Type.Kind().String() {
	case "string":
		return "a string"
	case "int", "int64", "uint64", "float64":
		return "an integer"
	case "bool":
		return "true or false"
	case "slice":
		if e.Type.Elem().Kind().String() == "uint8" {
			return "a base64 string"
		}
		return "an array"
	case "struct", "map", "ptr":
		if e.Type.String() == "time.Time" {
			return "an RFC 3339 time string"
		}
		return "an object"
	}
	return "a " + e.Type.Kind().String()
}

// scanned is what the scan learned of a frame.
type scanned struct {
	typ      string // "type", when it was read once as a string
	typeSeen bool
	taskNo   string  // the frame's top-level "task_no", when read once as a string
	keys     []keyAt // object keys outside a job's document, in frame order
	// Times "type" and "task_no" appear at the top: a repeated one is
	// ambiguous and is not used even to describe an error.
	typeCount, taskNoCount int
}

// keyAt is one object key and where it was found.
type keyAt struct {
	schema  string // the object's path without indices, as schema keys it
	display string // the object's path with indices, for errors
	key     string
}

// blame completes fe with what the scan learned: the frame's type, and the
// task_no of a job so the agent can answer job_ack rejected.
func (sc *scanned) blame(fe *FrameError) *FrameError {
	fe.Field = shorten(fe.Field, 128) // a key can be as long as the frame
	if _, known := newMessage[sc.typ]; known && sc.typeCount == 1 {
		fe.Type = sc.typ // never echo an arbitrary string as a type
		if sc.typ == TypeJob && sc.taskNoCount == 1 {
			fe.TaskNo = sc.taskNo
		}
	}
	return fe
}

// level is one open object or array during the scan.
type level struct {
	object  bool
	wantKey bool   // object: the next token is a key or '}'
	key     string // object: the last key read
	index   int    // array: the index of the next element
	schema  string // this container's path without indices
	display string // this container's path with indices
	keys    map[string]struct{}
	lax     bool // inside a job's document: the renderer judges it
}

// scan walks the frame's tokens once: it checks that the frame is exactly
// one JSON object nested at most maxDepth deep, with no null and no key
// twice in an object (a job's document aside: the renderer refuses those
// with the line number), reads "type" and "task_no", and records every key
// for the schema check. After a null or a repeated key it walks on, so
// that the error can still name the frame's type and a job's task_no; a
// syntax error or too deep a nesting ends it at once.
func scan(frame []byte) (*scanned, *FrameError) {
	sc := &scanned{}
	var soft *FrameError // the first null or repeated key
	fail := func(fe *FrameError) {
		if soft == nil {
			soft = fe
		}
	}
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	var stack []level
	for {
		tok, err := dec.Token()
		if err != nil {
			return sc, firstOf(soft, tokenError(err, len(stack) == 0))
		}
		if len(stack) == 0 {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return sc, &FrameError{Code: CodeBadJSON, Reason: "must be a JSON object like {\"type\": ...}, not " + describe(tok)}
			}
			stack = append(stack, level{object: true, wantKey: true, keys: map[string]struct{}{}})
			continue
		}
		top := &stack[len(stack)-1]
		atTop := len(stack) == 1
		if top.object && top.wantKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
			} else {
				key, _ := tok.(string) // the decoder allows only a string here
				if !top.lax {
					if _, dup := top.keys[key]; dup {
						fail(&FrameError{Code: CodeBadJSON, Field: join(top.display, key), Reason: "appears twice; send each field once"})
					}
					top.keys[key] = struct{}{}
					sc.keys = append(sc.keys, keyAt{schema: top.schema, display: top.display, key: key})
				}
				if atTop && key == "type" {
					sc.typeCount++
				}
				if atTop && key == "task_no" {
					sc.taskNoCount++
				}
				top.key, top.wantKey = key, false
				continue
			}
		} else {
			// A value inside top.
			schemaPath, display := top.schema, top.display
			if top.object {
				schemaPath, display = join(top.schema, top.key), join(top.display, top.key)
			} else {
				display += "[" + strconv.Itoa(top.index) + "]"
			}
			switch tok {
			case json.Delim('{'), json.Delim('['):
				if atTop && top.key == "type" {
					fail(&FrameError{Code: CodeBadJSON, Field: "type", Reason: "must be a string"})
				}
				if len(stack) >= maxDepth {
					return sc, firstOf(soft, &FrameError{Code: CodeBadJSON, Field: display, Reason: fmt.Sprintf("nests deeper than %d levels", maxDepth)})
				}
				obj := tok == json.Delim('{')
				l := level{object: obj, wantKey: obj, schema: schemaPath, display: display,
					lax: top.lax || (atTop && top.key == "document")}
				if obj && !l.lax {
					l.keys = map[string]struct{}{}
				}
				stack = append(stack, l)
				continue
			case json.Delim(']'):
				stack = stack[:len(stack)-1]
			default:
				if tok == nil && !top.lax {
					fail(&FrameError{Code: CodeBadJSON, Field: display, Reason: "is null; leave an empty field out instead"})
				}
				if atTop {
					s, isString := tok.(string)
					switch {
					case top.key == "type" && !isString && tok != nil:
						fail(&FrameError{Code: CodeBadJSON, Field: "type", Reason: "must be a string"})
					case top.key == "type" && isString:
						sc.typ, sc.typeSeen = s, true
					case top.key == "task_no" && isString:
						sc.taskNo = s
					}
				}
				top.next()
				continue
			}
		}
		// A container closed: it was a value of the level below, if any.
		if len(stack) == 0 {
			break
		}
		stack[len(stack)-1].next()
	}
	if _, err := dec.Token(); err != io.EOF {
		return sc, firstOf(soft, &FrameError{Code: CodeBadJSON, Reason: "has more after the JSON object; send exactly one object per frame"})
	}
	return sc, soft
}

// firstOf returns the error that comes first in the frame: an earlier
// soft one, else fe.
func firstOf(soft, fe *FrameError) *FrameError {
	if soft != nil {
		return soft
	}
	return fe
}

// next moves past a value just read inside l.
func (l *level) next() {
	if l.object {
		l.wantKey = true
	} else {
		l.index++
	}
}

// tokenError explains a tokenizer error; empty is whether no token was read.
func tokenError(err error, empty bool) *FrameError {
	var syn *json.SyntaxError
	switch {
	case err == io.EOF && empty:
		return &FrameError{Code: CodeBadJSON, Reason: "is empty; a frame is one JSON object", Err: err}
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return &FrameError{Code: CodeBadJSON, Reason: "ends in the middle of the JSON object", Err: err}
	case errors.As(err, &syn):
		return &FrameError{Code: CodeBadJSON, Reason: fmt.Sprintf("is not valid JSON at byte %d: %v", syn.Offset, syn), Err: err}
	}
	return &FrameError{Code: CodeBadJSON, Reason: "is not valid JSON: " + err.Error(), Err: err}
}

// describe names the JSON kind of a token for an error.
func describe(tok json.Token) string {
	switch tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	}
	if tok == json.Delim('[') {
		return "an array"
	}
	return "other JSON"
}
