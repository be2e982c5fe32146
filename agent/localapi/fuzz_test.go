package localapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/agent/localapi"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// errDryRun stops the spool's commit once Accept has validated a task, so
// the fuzzer checks every body against the spool's own rules without
// writing (and fsyncing) tens of thousands of tasks.
var errDryRun = errors.New("dry run: validated, not stored")

// intakeBackend is a Backend whose Submit hands the task to a real spool
// in dry-run mode and records what it was given and what the spool said.
// Only Submit is reached by the fuzzer.
type intakeBackend struct {
	fakeBackend
	s       *spool.Spool
	got     *spool.NewTask
	verdict error // Accept's answer; errDryRun means the spool would store it
}

func (b *intakeBackend) Submit(ctx context.Context, nt spool.NewTask) (*spool.Task, bool, error) {
	if nt.Invalid != nil {
		// Handed on only so a known task_no is answered duplicate first;
		// this dry-run spool knows none, so it is the door's refusal.
		return nil, false, nt.Invalid
	}
	if len(nt.Document) > 0 {
		// The agent parses the document before it accepts the task.
		if _, err := escpos.ParseDocument(nt.Document); err != nil {
			return nil, false, fmt.Errorf("%w: %v", api.ErrBadDocument, err)
		}
	}
	b.got = &nt
	_, _, err := b.s.Accept(nt)
	b.verdict = err
	if errors.Is(err, errDryRun) {
		return &spool.Task{TaskNo: nt.TaskNo, Printer: nt.Printer, State: spool.StateAccepted, Seq: 1}, false, nil
	}
	return nil, false, err
}

// fuzzBodyLimit keeps the HTTP limit small, so the fuzzer reaches 413 too.
const fuzzBodyLimit = 4096

// FuzzSubmit posts arbitrary bodies to POST /api/v1/tasks, with and
// without a Content-Length, and checks the intake's promises:
//   - a refusal is always a 4xx {"error":{"code","message"}} with one of
//     the intake's codes, never a 5xx (nothing a client sends is the
//     agent's fault) and never a task handed on;
//   - a body accepted (202) yields exactly one task, and that task passes
//     the spool's own validation (Accept, stopped just before the write);
//   - the task is what the body said: the same task_no and printer, the
//     payload's base64 decoded or the document as sent, a priority and a
//     timeout within the documented ranges, origin local;
//   - every answer passes checkAnswer (JSON, no secrets echoed).
func FuzzSubmit(f *testing.F) {
	s, err := spool.Open(filepath.Join(f.TempDir(), "spool.db"), spool.Options{
		MaxTaskBytes: 1024,
		FailCommit:   func() error { return errDryRun },
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	b := &intakeBackend{s: s}
	h := localapi.New(b, localapi.Options{Token: testToken, MaxBodyBytes: fuzzBodyLimit})

	for _, body := range []string{
		payloadTask("ORD-1_KITCHEN_v1", "kitchen", []byte("\x1b@hello\n\x1dV\x00")),
		`{"task_no":"ORD-2:bar.v1","printer":"bar","priority":"urgent","timeout":"2m","document":{"lines":[{"text":"Burger","size":"double"},{"qr":"x"}]}}`,
		`{"task_no":"A","printer":"k","payload":"G0A=","document":null,"priority":"normal","timeout":"1s"}`,
		"{\"task_no\":\"A\",\"printer\":\"k\",\"payload\":\"G0Bo\\nZWxsbw==\"}",
		`{"task_no":"A","printer":"k","payload":"G0A=","document":{"lines":[{}]}}`,
		`{"task_no":"A","printer":"k","payload":"not base64"}`,
		`{"task_no":"A","printer":"k","payload":""}`,
		`{"task_no":"A","printer":"k","document":{"lines":[]}}`,
		`{"task_no":"A","printer":"k","document":[{"text":"x"}]}`,
		`{"task_no":"A","printer":"k","payload":"G0A=","timeout":"25h"}`,
		`{"task_no":"A","printer":"k","payload":"G0A=","timeout":"-1s"}`,
		`{"task_no":"A b","printer":"k","payload":"G0A="}`,
		`{"task_no":"A","printer":"k:1","payload":"G0A="}`,
		`{"task_no":"A","printer":"k","payload":"G0A=","priorty":"urgent"}`,
		`{"TASK_NO":"A","Printer":"k","PAYLOAD":"G0A="}`,
		`{"task_no":1,"printer":"k","payload":"G0A="}`,
		`{"task_no":"A","printer":"k","payload":"G0A="} {}`,
		`{"task_no":"A","printer":"k","payload":"G0A="`,
		`[]`, `null`, ``, `"x"`,
		`{"task_no":"A","printer":"k","document":{"lines":[{"text":"` + string(bytes.Repeat([]byte("x"), 1100)) + `"}]}}`,
	} {
		f.Add([]byte(body), false)
	}
	f.Add([]byte(`{"task_no":"A","printer":"k","payload":"`+string(bytes.Repeat([]byte("QUFB"), 1100))+`"}`), true)

	codes := []string{api.CodeBadJSON, api.CodeUnknownField, api.CodeInvalidTask, api.CodeBadPayload,
		api.CodeBadDocument, api.CodeBadTimeout, api.CodePayloadTooLarge}
	f.Fuzz(func(t *testing.T, body []byte, chunked bool) {
		b.got, b.verdict = nil, nil
		req := httptest.NewRequest(http.MethodPost, "/api/v1/tasks", bytes.NewReader(body))
		if chunked {
			// As a client streaming the body would: no length known up front.
			req.ContentLength = -1
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		a := newClient(t, h).send(req)

		if a.status != http.StatusAccepted {
			if a.status < 400 || a.status > 499 {
				t.Fatalf("body %q answered %d: %s", body, a.status, a.body)
			}
			if !slices.Contains(codes, a.code()) {
				t.Fatalf("body %q answered %d with code %q, not an intake code", body, a.status, a.code())
			}
			if b.got != nil && !(a.status == http.StatusRequestEntityTooLarge && errors.Is(b.verdict, spool.ErrTooLarge)) {
				t.Fatalf("body %q was refused with %d %s after its task was handed on (spool: %v)", body, a.status, a.code(), b.verdict)
			}
			return
		}

		if b.got == nil {
			t.Fatalf("body %q answered 202 without a task reaching the backend", body)
		}
		if !errors.Is(b.verdict, errDryRun) {
			t.Fatalf("body %q answered 202, but the spool refuses its task: %v", body, b.verdict)
		}
		nt := b.got
		var req2 struct {
			TaskNo   string          `json:"task_no"`
			Printer  string          `json:"printer"`
			Priority string          `json:"priority"`
			Timeout  string          `json:"timeout"`
			Payload  *string         `json:"payload"`
			Document json.RawMessage `json:"document"`
		}
		if err := json.Unmarshal(body, &req2); err != nil {
			t.Fatalf("body %q was accepted but is not a JSON object: %v", body, err)
		}
		if nt.TaskNo != req2.TaskNo || nt.Printer != req2.Printer {
			t.Fatalf("body %q became task %q for printer %q", body, nt.TaskNo, nt.Printer)
		}
		if nt.Origin != spool.OriginLocal || nt.ReprintOf != "" || nt.PossibleDuplicate {
			t.Fatalf("a LAN task has origin %q, reprint_of %q, possible duplicate %v", nt.Origin, nt.ReprintOf, nt.PossibleDuplicate)
		}
		if string(nt.Priority) != req2.Priority || (nt.Priority != "" && nt.Priority != spool.PriorityNormal && nt.Priority != spool.PriorityUrgent) {
			t.Fatalf("priority %q became %q", req2.Priority, nt.Priority)
		}
		switch {
		case len(nt.Payload) > 0 && len(nt.Document) > 0, len(nt.Payload) == 0 && len(nt.Document) == 0:
			t.Fatalf("task has %d payload and %d document bytes; want exactly one", len(nt.Payload), len(nt.Document))
		case len(nt.Payload) > 0:
			want, err := base64.StdEncoding.DecodeString(*req2.Payload)
			if err != nil || !bytes.Equal(want, nt.Payload) {
				t.Fatalf("payload %q became %q", *req2.Payload, nt.Payload)
			}
		default:
			if !bytes.Equal(nt.Document, req2.Document) || !json.Valid(nt.Document) {
				t.Fatalf("document %s became %s", req2.Document, nt.Document)
			}
			var outline struct{ Lines []map[string]json.RawMessage }
			if err := json.Unmarshal(nt.Document, &outline); err != nil || len(outline.Lines) == 0 {
				t.Fatalf("accepted document %s is not an object with lines of objects: %v", nt.Document, err)
			}
		}
		if req2.Timeout == "" && nt.Timeout != 0 || req2.Timeout != "" && (nt.Timeout < localapi.MinTaskTimeout || nt.Timeout > localapi.MaxTaskTimeout) {
			t.Fatalf("timeout %q became %s", req2.Timeout, nt.Timeout)
		}
		if req2.Timeout != "" {
			if d, err := time.ParseDuration(req2.Timeout); err != nil || d != nt.Timeout {
				t.Fatalf("timeout %q became %s", req2.Timeout, nt.Timeout)
			}
		}
		var ans struct {
			TaskNo    string `json:"task_no"`
			Duplicate *bool  `json:"duplicate"`
		}
		if a.decode(t, &ans); ans.TaskNo != nt.TaskNo || ans.Duplicate == nil || *ans.Duplicate {
			t.Fatalf("202 answer %s for task %q", a.body, nt.TaskNo)
		}
	})
}
