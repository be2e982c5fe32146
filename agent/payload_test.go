package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"printgate/agent/api"
	"printgate/agent/localapi"
	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// cutQR is a payload that ends inside a command: GS ( k declaring 256 more
// bytes, at offset 10.
var cutQR = append([]byte("\x1b@TICKET Q\n"), 0x1d, 0x28, 0x6b, 0x00, 0x01)

// TestPayloadEndingInsideCommandRefused ensures a raw payload that ends
// inside a command is refused at intake with 400 bad_payload naming the
// command and its offset (docs/DESIGN.md, invariant 9), that a
// resend of a known task_no with such a payload is still the duplicate it
// is (invariant 7), and that a raw port's job, which the port marks
// truncated, is not refused.
func TestPayloadEndingInsideCommandRefused(t *testing.T) {
	const token = "test-token-0123456789abcdef"
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.waitPrinter("k", "READY")
	srv := localapi.New(h.a, localapi.Options{Token: token})
	post := func(taskNo string, payload []byte) (int, string) {
		body := `{"task_no":"` + taskNo + `","printer":"k","payload":"` + base64.StdEncoding.EncodeToString(payload) + `"}`
		req := httptest.NewRequest(http.MethodPost, "/api/v1/tasks", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}

	code, body := post("BAD_v1", cutQR)
	var ans struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || code != http.StatusBadRequest || ans.Error.Code != api.CodeBadPayload {
		t.Fatalf("payload ending inside GS ( k: %d %s, want 400 bad_payload", code, body)
	}
	for _, want := range []string{"GS ( k", "offset 11", "1d 28 6b 00 01"} {
		if !strings.Contains(ans.Error.Message, want) {
			t.Errorf("message %q does not say %q", ans.Error.Message, want)
		}
	}
	if _, err := h.sp.Get("BAD_v1"); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("refused task stored: %v", err)
	}

	// A known task_no is answered before the payload check: as the
	// duplicate it is when its resend carries the same bytes, as another
	// ticket's (409) when it carries a cut payload instead.
	good := []byte("TICKET GOOD_v1\n\x1dV\x00")
	if code, body := post("GOOD_v1", good); code != http.StatusAccepted {
		t.Fatalf("good payload: %d %s", code, body)
	}
	h.waitTask("GOOD_v1", spool.StatePrinted)
	code, body = post("GOOD_v1", cutQR)
	if err := json.Unmarshal([]byte(body), &ans); err != nil || code != http.StatusConflict || ans.Error.Code != api.CodeTaskNoOtherContent {
		t.Errorf("a known task_no with a cut payload: %d %s, want 409 task_no_other_content", code, body)
	}
	code, body = post("GOOD_v1", good)
	var dup struct {
		Duplicate bool        `json:"duplicate"`
		State     spool.State `json:"state"`
	}
	if err := json.Unmarshal([]byte(body), &dup); err != nil || code != http.StatusOK || !dup.Duplicate || dup.State != spool.StatePrinted {
		t.Errorf("resend of a known task_no: %d %s, want 200 duplicate PRINTED", code, body)
	}

	// A raw port's job keeps the port's handling: taken, not refused.
	if _, dup, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: "RAW_k_1", Printer: "k", Origin: spool.OriginRaw, Payload: cutQR, Truncated: true}); err != nil || dup {
		t.Errorf("raw job: dup=%v err=%v, want accepted", dup, err)
	}
}

// TestAllowListKeepsKnownEncoders ensures the allow-list (checkAllowed, the
// raw port's strip table and decode.Known) passes everything real encoders
// send: the third-party POS encoder's corpus, our own rendered tickets
// (every demo and fixture document, on every profile, with every banner),
// and the rendered fixtures.
func TestAllowListKeepsKnownEncoders(t *testing.T) {
	var streams []string
	for _, g := range []string{"../drivers/escpos/decode/testdata/thirdparty/*.bin", "../testdata/escpos/*.bin"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, m...)
	}
	if len(streams) < 10 {
		t.Fatalf("found %d streams, want the corpus and the fixtures", len(streams))
	}
	for _, f := range streams {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := "epson-80"
		if strings.Contains(filepath.Base(f), "xprinter") {
			name = "xprinter-80"
		}
		p, err := escpos.LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkAllowed(b, p); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	docs, err := filepath.Glob("../testdata/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range docs {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var task struct {
			Document json.RawMessage `json:"document"`
		}
		if json.Unmarshal(raw, &task) == nil && len(task.Document) > 0 {
			raw = task.Document
		}
		doc, err := escpos.ParseDocument(raw)
		if err != nil {
			continue // not a document (a config, a task list)
		}
		for _, name := range escpos.ProfileNames() {
			p, _ := escpos.LookupProfile(name)
			opts := escpos.RenderOptions{PossibleDuplicate: true, Reprint: true, FailoverFrom: "a", FailoverTo: "b", Incomplete: true}
			b, err := escpos.Render(doc, p, opts)
			if err != nil {
				continue // a document this paper cannot take
			}
			n++
			if err := checkAllowed(b, p); err != nil {
				t.Errorf("%s on %s: %v", f, name, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no document rendered")
	}
}
