package localapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"printgate/agent/api"
	"printgate/spool"
)

// Bounds of a task's "timeout" at intake (PROTOCOL.md §3), refused with
// 400 bad_timeout outside them; the spool holds the one definition.
const (
	// MinTaskTimeout is the shortest timeout a submitter may ask for.
	MinTaskTimeout = spool.MinTimeout
	// MaxTaskTimeout is the longest timeout a submitter may ask for.
	MaxTaskTimeout = spool.MaxTimeout
)

// submitRequest is the body of POST /api/v1/tasks (PROTOCOL.md §3).
type submitRequest struct {
	TaskNo   string          `json:"task_no"`
	Printer  string          `json:"printer"`
	Priority string          `json:"priority"`
	Payload  *string         `json:"payload"`  // base64; a pointer to tell "" from absent
	Document json.RawMessage `json:"document"` // kept as sent; the agent renders it
	Timeout  string          `json:"timeout"`  // Go duration, e.g. "90s"
}

// submitAnswer is the body of a successful POST /api/v1/tasks.
type submitAnswer struct {
	TaskNo    string      `json:"task_no"`
	State     spool.State `json:"state"`
	Seq       uint64      `json:"seq"`
	Duplicate bool        `json:"duplicate"`
}

// submit is POST /api/v1/tasks: 202 for a new task once it is durable, 200
// with duplicate=true for a task_no already known. A request this door
// refuses still goes to the backend when its task_no could be read, with
// the refusal in Invalid: a task_no already known is answered as the
// duplicate it is, whatever else is wrong with the request (docs/DESIGN.md,
// invariant 7).
func (s *server) submit(w http.ResponseWriter, r *http.Request) {
	var req submitRequest
	e := s.readJSON(w, r, &req)
	nt := spool.NewTask{TaskNo: req.TaskNo, Printer: req.Printer, Origin: spool.OriginLocal}
	if e == nil {
		nt, e = s.newTask(&req)
	}
	if e != nil {
		if req.TaskNo == "" {
			s.fail(w, r, e)
			return
		}
		nt.Invalid = e
	}
	task, dup, err := s.b.Submit(r.Context(), nt)
	if err != nil {
		if errors.As(err, &e) {
			s.fail(w, r, e)
			return
		}
		s.fail(w, r, fromBackend(err, nt.TaskNo, nt.Printer))
		return
	}
	status := http.StatusAccepted
	if dup {
		status = http.StatusOK
	}
	writeJSON(w, status, submitAnswer{TaskNo: task.TaskNo, State: task.State, Seq: task.Seq, Duplicate: dup})
}

// newTask checks req's shape against the spool's rules and turns it into a
// spool.NewTask; a refusal here gives the submitter a specific code, once
// the backend has had its chance to answer duplicate (see submit).
func (s *server) newTask(req *submitRequest) (spool.NewTask, *apiError) {
	nt := spool.NewTask{TaskNo: req.TaskNo, Printer: req.Printer, Origin: spool.OriginLocal}
	if err := spool.ValidTaskNo(req.TaskNo); err != nil {
		return nt, newError(http.StatusBadRequest, api.CodeInvalidTask, "%s", err)
	}
	if err := spool.ValidPrinterName(req.Printer); err != nil {
		return nt, newError(http.StatusBadRequest, api.CodeInvalidTask, "%s", err)
	}
	nt.Priority = spool.Priority(req.Priority)
	if !spool.ValidPriority(nt.Priority) {
		return nt, newError(http.StatusBadRequest, api.CodeInvalidTask, "priority %q is neither \"urgent\" nor \"normal\" (leave it out for normal)", req.Priority)
	}

	hasDoc := len(req.Document) > 0 && !bytes.Equal(req.Document, []byte("null"))
	switch {
	case req.Payload != nil && hasDoc:
		return nt, newError(http.StatusBadRequest, api.CodeInvalidTask, "task %s has both payload and document; send exactly one", req.TaskNo)
	case req.Payload == nil && !hasDoc:
		return nt, newError(http.StatusBadRequest, api.CodeInvalidTask, "task %s has neither payload (base64 ESC/POS) nor document (ticket lines); send exactly one", req.TaskNo)
	case req.Payload != nil:
		// StdEncoding skips line breaks, so MIME-wrapped base64 works too.
		b, err := base64.StdEncoding.DecodeString(*req.Payload)
		if err != nil {
			return nt, newError(http.StatusBadRequest, api.CodeBadPayload, "payload is not valid base64 (standard alphabet, padded): %v", err)
		}
		if len(b) == 0 {
			return nt, newError(http.StatusBadRequest, api.CodeBadPayload, "payload is empty; send the ESC/POS bytes as base64")
		}
		nt.Payload = b
	default:
		// The backend parses the document, once, for the printer's
		// profile: a document it refuses is ErrBadDocument.
		nt.Document = req.Document
	}

	d, err := spool.ParseTimeout(req.Timeout)
	if err != nil {
		return nt, newError(http.StatusBadRequest, api.CodeBadTimeout, "%s (leave it out for the agent's default)", err)
	}
	nt.Timeout = d
	return nt, nil
}

// readJSON decodes exactly one JSON object from r's body into v, refusing
// unknown fields (a misspelt field would otherwise be silently dropped) and
// bodies over MaxBodyBytes.
func (s *server) readJSON(w http.ResponseWriter, r *http.Request, v any) *apiError {
	if r.ContentLength > s.opts.MaxBodyBytes {
		return s.tooLarge()
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return s.decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if e := s.decodeError(err); e != nil && e.status == http.StatusRequestEntityTooLarge {
			return e
		}
		return newError(http.StatusBadRequest, api.CodeBadJSON, "the body has more after the JSON object; send exactly one object")
	}
	return nil
}

func (s *server) tooLarge() *apiError {
	return newError(http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge,
		"the request body is over the agent's %d byte limit; send a smaller ticket (base64 makes a payload a third bigger than its bytes)", s.opts.MaxBodyBytes)
}

// decodeError explains a decoding failure in the submitter's terms.
func (s *server) decodeError(err error) *apiError {
	var (
		tooBig *http.MaxBytesError
		syn    *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooBig):
		return s.tooLarge()
	case errors.Is(err, io.EOF):
		return newError(http.StatusBadRequest, api.CodeBadJSON, "the body is empty; send the task as one JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newError(http.StatusBadRequest, api.CodeBadJSON, "the body ends in the middle of the JSON; send the whole object")
	case errors.As(err, &syn):
		return newError(http.StatusBadRequest, api.CodeBadJSON, "the body is not valid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return newError(http.StatusBadRequest, api.CodeBadJSON, "the body must be a JSON object, not %s", typ.Value)
		}
		return newError(http.StatusBadRequest, api.CodeBadJSON, "field %q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this one.
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return newError(http.StatusBadRequest, api.CodeUnknownField, "field %s is not part of a task; the fields are task_no, printer, priority, payload, document and timeout", field)
	}
	return newError(http.StatusBadRequest, api.CodeBadJSON, "the body could not be read as a task: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string", "ptr":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "a " + goKind
}
