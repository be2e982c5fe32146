package wire_test

import (
	"errors"
	"strings"
	"testing"

	"printgate/sync/wire"
)

// rejection is a frame Decode must refuse and how.
type rejection struct {
	name   string
	frame  string
	code   string
	typ    string // FrameError.Type
	field  string // FrameError.Field
	reason string // a part of FrameError.Reason
}

func checkRejections(t *testing.T, cases []rejection) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := wire.Decode([]byte(c.frame))
			if err == nil {
				t.Fatalf("Decode(%s) = %#v, want a %s error", shortFrame(c.frame), m, c.code)
			}
			fe := frameError(t, err)
			if fe.Code != c.code || fe.Type != c.typ || fe.Field != c.field || !strings.Contains(fe.Reason, c.reason) {
				t.Fatalf("Decode(%s):\n got code=%q type=%q field=%q reason=%q\nwant code=%q type=%q field=%q reason containing %q",
					shortFrame(c.frame), fe.Code, fe.Type, fe.Field, fe.Reason, c.code, c.typ, c.field, c.reason)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func shortFrame(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// TestDecodeRejectsSize ensures a frame over MaxFrameBytes is refused
// before it is parsed, and one of exactly MaxFrameBytes is not.
func TestDecodeRejectsSize(t *testing.T) {
	base := `{"type":"logs_stop","id":"t-1"}`
	exact := base + strings.Repeat(" ", wire.MaxFrameBytes-len(base))
	if _, err := wire.Decode([]byte(exact)); err != nil {
		t.Fatalf("a frame of exactly MaxFrameBytes: %v", err)
	}
	_, err := wire.Decode([]byte(exact + " "))
	if fe := frameError(t, err); fe.Code != wire.CodeTooLarge || !strings.Contains(fe.Reason, "2097153 bytes") {
		t.Fatalf("a frame one byte over: code %q reason %q, want too_large naming its size", fe.Code, fe.Reason)
	}
}

// TestDecodeTooLargeJobNamesTask ensures a job frame over MaxFrameBytes
// but within ReadLimit is refused as too_large naming its type and
// task_no, wherever the task_no stands, so the agent can answer it with
// job_ack; one over ReadLimit is not read for either.
func TestDecodeTooLargeJobNamesTask(t *testing.T) {
	job := func(size int, taskFirst bool) []byte {
		head, tail := `{"type":"job","task_no":"BIG_v1","printer":"kitchen","payload":"`, `"}`
		if !taskFirst {
			head, tail = `{"type":"job","printer":"kitchen","payload":"`, `","task_no":"BIG_v1"}`
		}
		return []byte(head + strings.Repeat("A", size-len(head)-len(tail)) + tail)
	}
	for _, c := range []struct {
		name      string
		frame     []byte
		wantTask  string
		wantTyped bool
	}{
		{"one byte over", job(wire.MaxFrameBytes+1, true), "BIG_v1", true},
		{"task_no last", job(wire.MaxFrameBytes+1, false), "BIG_v1", true},
		{"at the read limit", job(wire.ReadLimit, true), "BIG_v1", true},
		{"past the read limit", job(wire.ReadLimit+1, true), "", false},
	} {
		_, err := wire.Decode(c.frame)
		fe := frameError(t, err)
		if fe.Code != wire.CodeTooLarge || fe.TaskNo != c.wantTask || (fe.Type == wire.TypeJob) != c.wantTyped {
			t.Errorf("%s: code %q type %q task_no %q, want too_large with task_no %q", c.name, fe.Code, fe.Type, fe.TaskNo, c.wantTask)
		}
	}
}

// TestDecodeRejectsNotOneObject ensures a frame must be exactly one JSON
// object: not empty, not another JSON value, not cut short, nothing after.
func TestDecodeRejectsNotOneObject(t *testing.T) {
	stop := `{"type":"logs_stop","id":"t-1"}`
	checkRejections(t, []rejection{
		{"empty", ``, wire.CodeBadJSON, "", "", "is empty"},
		{"blank", " \n", wire.CodeBadJSON, "", "", "is empty"},
		{"array", `[{"type":"logs_stop","id":"t-1"}]`, wire.CodeBadJSON, "", "", "not an array"},
		{"string", `"logs_stop"`, wire.CodeBadJSON, "", "", "not a string"},
		{"null", `null`, wire.CodeBadJSON, "", "", "not null"},
		{"number", `42`, wire.CodeBadJSON, "", "", "not a number"},
		{"syntax", `{"type":"logs_stop",}`, wire.CodeBadJSON, "logs_stop", "", "not valid JSON at byte"},
		{"not json", `type=logs_stop`, wire.CodeBadJSON, "", "", "not valid JSON at byte 2"},
		{"cut short", stop[:20], wire.CodeBadJSON, "logs_stop", "", "ends in the middle"},
		{"second object", stop + stop, wire.CodeBadJSON, "logs_stop", "", "has more after the JSON object"},
		{"trailing garbage", stop + " x", wire.CodeBadJSON, "logs_stop", "", "has more after the JSON object"},
		{"trailing comma", stop + ",", wire.CodeBadJSON, "logs_stop", "", "has more after the JSON object"},
	})
}

// TestDecodeRejectsType ensures "type" must be present, a string, and one
// of the message types; the error names the type and lists the known ones,
// and never echoes an unknown type as the frame's Type.
func TestDecodeRejectsType(t *testing.T) {
	checkRejections(t, []rejection{
		{"missing", `{"id":"t-1"}`, wire.CodeUnknownType, "", "type", "is required; the types are cancel, command_result, error,"},
		{"empty", `{"type":"","id":"t-1"}`, wire.CodeUnknownType, "", "type", `"" is not a message type`},
		{"unknown", `{"type":"jobs","task_no":"A"}`, wire.CodeUnknownType, "", "type", `"jobs" is not a message type; the types are cancel, command_result, error, events, events_ack, hello, job, job_ack, log_lines, logs_stop, logs_tail, printers, reprint, revoke, welcome`},
		{"wrong case", `{"type":"Job"}`, wire.CodeUnknownType, "", "type", `"Job" is not a message type`},
		{"key case", `{"Type":"logs_stop","id":"t-1"}`, wire.CodeUnknownType, "", "type", "is required"},
		{"number", `{"type":7}`, wire.CodeBadJSON, "", "type", "must be a string"},
		{"object", `{"type":{"name":"job"}}`, wire.CodeBadJSON, "", "type", "must be a string"},
		{"null", `{"type":null}`, wire.CodeBadJSON, "", "type", "is null"},
		{"long unknown", `{"type":"` + strings.Repeat("x", 500) + `"}`, wire.CodeUnknownType, "", "type", `"` + strings.Repeat("x", 64) + `"…`},
	})
}

// TestDecodeRejectsUnknownFields ensures a field §5 does not define is
// refused wherever it is, by exact name (encoding/json alone would take
// "Task_No" for task_no), with the path and the fields allowed there.
func TestDecodeRejectsUnknownFields(t *testing.T) {
	job := goldenOf(t, wire.TypeJob)
	events := goldenOf(t, wire.TypeEvents)
	checkRejections(t, []rejection{
		{"top level", edit(t, job, func(m map[string]any) { m["copies"] = 2 }), wire.CodeUnknownField, "job", "copies",
			"is not a field of the job frame; the fields are document, payload, printer, priority, task_no, timeout, type"},
		{"other type's field", edit(t, job, func(m map[string]any) { m["batch"] = "b" }), wire.CodeUnknownField, "job", "batch", "is not a field of the job frame"},
		{"case variant", strings.Replace(job, `"task_no"`, `"Task_No"`, 1), wire.CodeUnknownField, "job", "Task_No", "is not a field"},
		{"case duplicate", strings.Replace(job, `{"type":"job",`, `{"type":"job","TASK_NO":"X",`, 1), wire.CodeUnknownField, "job", "TASK_NO", "is not a field"},
		{"in an event", edit(t, events, func(m map[string]any) { first(m, "events")["life"] = 1 }), wire.CodeUnknownField, "events", "events[0].life",
			"is not a field of events[0] of the events frame; the fields are at, attempts, confirmation, job, n, origin,"},
		{"in an event's job", strings.Replace(events, `"size":5`, `"size":5,"bytes":5`, 1), wire.CodeUnknownField, "events", "events[0].job.bytes",
			"the fields are origin, printer, priority, sha256, size"},
		{"in a printer", strings.Replace(goldenOf(t, wire.TypeHello), `"name":"bar"`, `"name":"bar","url":"tcp://10.0.0.9"`, 1), wire.CodeUnknownField, "hello", "printers[1].url", "the fields are name, state"},
		{"in a problem", strings.Replace(goldenOf(t, wire.TypeCommandResult), `"ok":true`, `"ok":false,"error":{"code":"x","detail":"y"}`, 1), wire.CodeUnknownField, "command_result", "error.detail", "the fields are code, message"},
		{"in revoke", `{"type":"revoke","until":"never"}`, wire.CodeUnknownField, "revoke", "until", "the fields are reason, type"},
		{"long key", `{"type":"revoke","` + strings.Repeat("k", 300) + `":1}`, wire.CodeUnknownField, "revoke", strings.Repeat("k", 128) + "…", "is not a field"},
	})
}

// TestDecodeRejectsRepeatsAndNulls ensures a key given twice (where
// encoding/json would keep the last silently) and a null value are
// refused, except inside a job's document, which the renderer judges
// with line numbers.
func TestDecodeRejectsRepeatsAndNulls(t *testing.T) {
	job := goldenOf(t, wire.TypeJob)
	events := goldenOf(t, wire.TypeEvents)
	checkRejections(t, []rejection{
		{"repeated task_no", strings.Replace(job, `"printer":"kitchen"`, `"printer":"kitchen","task_no":"OTHER"`, 1), wire.CodeBadJSON, "job", "task_no", "appears twice"},
		{"repeated type", `{"type":"logs_stop","type":"logs_tail","id":"t-1"}`, wire.CodeBadJSON, "", "type", "appears twice"},
		{"repeated type, same value", `{"type":"logs_stop","id":"t-1","type":"logs_stop"}`, wire.CodeBadJSON, "", "type", "appears twice"},
		{"repeated in an event", strings.Replace(events, `"n":2,`, `"n":2,"n":3,`, 1), wire.CodeBadJSON, "events", "events[1].n", "appears twice"},
		{"null at top", edit(t, job, func(m map[string]any) { m["timeout"] = nil }), wire.CodeBadJSON, "job", "timeout", "is null"},
		{"null in an event", edit(t, events, func(m map[string]any) { first(m, "events")["job"] = nil }), wire.CodeBadJSON, "events", "events[0].job", "is null"},
		{"null in a list", `{"type":"log_lines","id":"t","lines":["a",null]}`, wire.CodeBadJSON, "log_lines", "lines[1]", "is null"},
		{"null document", `{"type":"job","task_no":"A","printer":"k","document":null}`, wire.CodeBadJSON, "job", "document", "is null"},
	})
	// Inside the document, repeats and nulls are the renderer's to refuse.
	doc := `{"type":"job","task_no":"A","printer":"k","document":{"lines":[{"text":"a","text":"b","bold":null}]}}`
	if _, err := wire.Decode([]byte(doc)); err != nil {
		t.Fatalf("a document with a repeated key and a null: %v; the renderer refuses those with the line number", err)
	}
}

// TestDecodeRejectsDepth ensures nesting is bounded, inside a document too.
func TestDecodeRejectsDepth(t *testing.T) {
	// The frame is level 1, the document 2, so x holds 30 arrays: 32.
	ok := `{"type":"job","task_no":"A","printer":"k","document":{"lines":[{"text":"a"}],"x":` + strings.Repeat("[", 30) + strings.Repeat("]", 30) + `}}`
	if _, err := wire.Decode([]byte(ok)); err != nil {
		t.Fatalf("32 levels: %v", err)
	}
	deep := `{"type":"job","task_no":"A","printer":"k","document":{"lines":[{"text":"a"}],"x":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}}`
	checkRejections(t, []rejection{
		{"33 levels", strings.Replace(ok, "[]", "[[]]", 1), wire.CodeBadJSON, "job", "document.x" + strings.Repeat("[0]", 30), "nests deeper than 32 levels"},
		{"100000 levels", deep, wire.CodeBadJSON, "job", "document.x" + strings.Repeat("[0]", 30), "nests deeper than 32 levels"},
	})
}

// TestDecodeRejectsWrongJSONTypes ensures a value of the wrong JSON type is
// refused with the field and the type expected.
func TestDecodeRejectsWrongJSONTypes(t *testing.T) {
	hello := goldenOf(t, wire.TypeHello)
	events := goldenOf(t, wire.TypeEvents)
	checkRejections(t, []rejection{
		{"string for int", edit(t, events, func(m map[string]any) { first(m, "events")["n"] = "1" }), wire.CodeBadJSON, "events", "events.n", "must be an integer, not string"},
		{"fraction for int", strings.Replace(hello, `"outbox":17`, `"outbox":1.5`, 1), wire.CodeBadJSON, "hello", "outbox", "must be an integer, not number 1.5"},
		{"overflowing int", strings.Replace(hello, `"outbox":17`, `"outbox":1e99`, 1), wire.CodeBadJSON, "hello", "outbox", "must be an integer"},
		{"object for array", edit(t, hello, func(m map[string]any) { m["printers"] = map[string]any{"name": "kitchen"} }), wire.CodeBadJSON, "hello", "printers", "must be an array, not object"},
		{"string for array", edit(t, hello, func(m map[string]any) { m["printers"] = "kitchen" }), wire.CodeBadJSON, "hello", "printers", "must be an array, not string"},
		{"string for bool", `{"type":"command_result","id":"c","ok":"true","task_no":"A"}`, wire.CodeBadJSON, "command_result", "ok", "must be true or false, not string"},
		{"number for string", `{"type":"logs_stop","id":7}`, wire.CodeBadJSON, "logs_stop", "id", "must be a string, not number"},
		{"array for object", `{"type":"job_ack","task_no":"A","result":"rejected","error":["x"]}`, wire.CodeBadJSON, "job_ack", "error", "must be an object, not array"},
		{"number for time", `{"type":"welcome","store_id":"s","server_time":1764504005}`, wire.CodeBadJSON, "welcome", "", "not a JSON string"},
		{"bad time", `{"type":"welcome","store_id":"s","server_time":"30/11/2026"}`, wire.CodeBadJSON, "welcome", "", `not RFC 3339 like "2026-11-30T12:00:00Z": "30/11/2026"`},
		{"number for payload", `{"type":"job","task_no":"A","printer":"k","payload":12}`, wire.CodeBadJSON, "job", "payload", "must be a base64 string, not number"},
		{"string for document", `{"type":"job","task_no":"A","printer":"k","document":"lines"}`, wire.CodeInvalid, "job", "document", "must be a JSON object"},
		{"array for document", `{"type":"job","task_no":"A","printer":"k","document":[{"text":"a"}]}`, wire.CodeInvalid, "job", "document", "must be a JSON object"},
	})
}

// TestDecodeRejectsMissingRequired ensures every field each type requires
// is checked: the golden frame without it is refused naming it.
func TestDecodeRejectsMissingRequired(t *testing.T) {
	required := map[string][]string{
		wire.TypeHello:         {"agent_id", "version", "printers", "printers[0].name", "printers[0].state"},
		wire.TypeWelcome:       {"store_id", "server_time"},
		wire.TypeJob:           {"task_no", "printer"},
		wire.TypeJobAck:        {"task_no", "result", "state"},
		wire.TypeEvents:        {"batch", "events", "events[0].task_no", "events[0].n", "events[0].state", "events[0].job.printer", "events[0].job.sha256"},
		wire.TypeEventsAck:     {"batch"},
		wire.TypeReprint:       {"id", "task_no"},
		wire.TypeCancel:        {"id", "task_no"},
		wire.TypeCommandResult: {"id", "task_no"},
		wire.TypeLogsTail:      {"id"},
		wire.TypeLogLines:      {"id", "lines"},
		wire.TypeLogsStop:      {"id"},
		wire.TypePrinters:      {"printers", "printers[0].name", "printers[0].state"},
		wire.TypeError:         {"code"},
		wire.TypeRevoke:        {},
	}
	for _, typ := range wire.Types() {
		fields, ok := required[typ]
		if !ok {
			t.Errorf("no required fields listed for %s", typ)
		}
		for _, f := range fields {
			reason := "is required"
			if f == "events[0].n" {
				reason = "is 0; events of a task are numbered from 1"
			}
			frame := edit(t, goldenOf(t, typ), func(m map[string]any) { deletePath(m, f) })
			checkRejections(t, []rejection{{typ + " without " + f, frame, wire.CodeInvalid, typ, f, reason}})
		}
	}
	// Empty values count as missing; an empty list too, but for printers
	// (TestNoPrinters).
	checkRejections(t, []rejection{
		{"empty task_no", `{"type":"reprint","id":"c","task_no":""}`, wire.CodeInvalid, "reprint", "task_no", "is required"},
		{"empty events", `{"type":"events","batch":"b","events":[]}`, wire.CodeInvalid, "events", "events", "at least one event"},
		{"empty lines", `{"type":"log_lines","id":"t","lines":[]}`, wire.CodeInvalid, "log_lines", "lines", "is required"},
		{"zero time", `{"type":"welcome","store_id":"s","server_time":"0001-01-01T00:00:00Z"}`, wire.CodeInvalid, "welcome", "server_time", "is required"},
	})
}

// deletePath deletes the field at a path like "events[0].job.sha256".
func deletePath(m map[string]any, path string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		if name, ok := strings.CutSuffix(p, "[0]"); ok {
			m = first(m, name)
		} else {
			m = m[p].(map[string]any)
		}
	}
	delete(m, parts[len(parts)-1])
}

// TestDecodeRejectsJob ensures a job carries exactly one of payload and
// document, a payload that is non-empty base64 and a known priority.
func TestDecodeRejectsJob(t *testing.T) {
	const head = `{"type":"job","task_no":"A-1","printer":"k",`
	checkRejections(t, []rejection{
		{"both", head + `"payload":"AQI=","document":{"lines":[]}}`, wire.CodeInvalid, "job", "", "has both payload and document"},
		{"neither", head + `"timeout":"90s"}`, wire.CodeInvalid, "job", "", "has neither payload (base64 ESC/POS) nor document"},
		{"empty payload", head + `"payload":""}`, wire.CodeInvalid, "job", "payload", "is empty"},
		{"bad base64", head + `"payload":"AQ!="}`, wire.CodeInvalid, "job", "payload", "is not valid base64 (standard alphabet, padded): bad data at byte 2"},
		{"unpadded base64", head + `"payload":"AQI"}`, wire.CodeInvalid, "job", "payload", "is not valid base64"},
		{"url base64", head + `"payload":"-_8="}`, wire.CodeInvalid, "job", "payload", "is not valid base64"},
		{"priority", head + `"payload":"AQI=","priority":"high"}`, wire.CodeInvalid, "job", "priority", `is "high"; it must be one of normal, urgent`},
	})
}

// TestDecodeRejectsValues ensures values outside the sets §5 names are
// refused: states, results, counts, enums, and the pairings of job_ack
// and command_result.
func TestDecodeRejectsValues(t *testing.T) {
	events := goldenOf(t, wire.TypeEvents)
	ev := func(key string, v any) string {
		return edit(t, events, func(m map[string]any) { first(m, "events")[key] = v })
	}
	evJob := func(key string, v any) string {
		return edit(t, events, func(m map[string]any) { first(m, "events")["job"].(map[string]any)[key] = v })
	}
	checkRejections(t, []rejection{
		{"n zero", ev("n", 0), wire.CodeInvalid, "events", "events[0].n", "is 0; events of a task are numbered from 1"},
		{"n negative", ev("n", -3), wire.CodeInvalid, "events", "events[0].n", "is -3"},
		{"unknown state", ev("state", "DONE"), wire.CodeInvalid, "events", "events[0].state", `is "DONE"; it must be one of ACCEPTED, QUEUED,`},
		{"state case", ev("state", "queued"), wire.CodeInvalid, "events", "events[0].state", `is "queued"`},
		{"attempts", ev("attempts", -1), wire.CodeInvalid, "events", "events[0].attempts", "is -1"},
		{"confirmation", ev("confirmation", "seen"), wire.CodeInvalid, "events", "events[0].confirmation", "must be one of printed, consumed, delivered"},
		{"origin", ev("origin", "pos"), wire.CodeInvalid, "events", "events[0].origin", "must be one of cloud, local, manager, raw"},
		{"job size", evJob("size", -1), wire.CodeInvalid, "events", "events[0].job.size", "is -1"},
		{"job sha256 upper", evJob("sha256", strings.Repeat("A", 64)), wire.CodeInvalid, "events", "events[0].job.sha256", "64 lowercase hex digits"},
		{"job sha256 short", evJob("sha256", "abc"), wire.CodeInvalid, "events", "events[0].job.sha256", "64 lowercase hex digits"},
		{"job priority", evJob("priority", "low"), wire.CodeInvalid, "events", "events[0].job.priority", "must be one of normal, urgent"},
		{"printer state", strings.Replace(goldenOf(t, wire.TypePrinters), "COVER_OPEN", "JAMMED", 1), wire.CodeInvalid, "printers", "printers[0].state", `is "JAMMED"; it must be one of READY, BUSY, PAPER_OUT, COVER_OPEN, OFFLINE, ERROR, UNKNOWN`},
		{"outbox", strings.Replace(goldenOf(t, wire.TypeHello), `"outbox":17`, `"outbox":-1`, 1), wire.CodeInvalid, "hello", "outbox", "is -1"},
		{"log level", `{"type":"logs_tail","id":"t","level":"trace","follow":false,"lines":0}`, wire.CodeInvalid, "logs_tail", "level", "must be one of debug, info, warn, error"},
		{"log lines", `{"type":"logs_tail","id":"t","follow":false,"lines":-5}`, wire.CodeInvalid, "logs_tail", "lines", "is -5"},
		{"result", `{"type":"job_ack","task_no":"A","result":"ok","state":"ACCEPTED"}`, wire.CodeInvalid, "job_ack", "result", "must be one of accepted, duplicate, rejected"},
		{"ack state", `{"type":"job_ack","task_no":"A","result":"duplicate","state":"DONE"}`, wire.CodeInvalid, "job_ack", "state", `is "DONE"`},
		{"rejected with state", `{"type":"job_ack","task_no":"A","result":"rejected","state":"ACCEPTED","error":{"code":"invalid_task"}}`, wire.CodeInvalid, "job_ack", "state", "must be left out when the result is rejected"},
		{"rejected without error", `{"type":"job_ack","task_no":"A","result":"rejected"}`, wire.CodeInvalid, "job_ack", "error", "is required when the result is rejected"},
		{"rejected without code", `{"type":"job_ack","task_no":"A","result":"rejected","error":{"message":"no"}}`, wire.CodeInvalid, "job_ack", "error.code", "is required"},
		{"accepted with error", `{"type":"job_ack","task_no":"A","result":"accepted","state":"ACCEPTED","error":{"code":"x"}}`, wire.CodeInvalid, "job_ack", "error", "must be left out when the result is accepted"},
		{"ok with error", `{"type":"command_result","id":"c","ok":true,"task_no":"A","error":{"code":"x"}}`, wire.CodeInvalid, "command_result", "error", "must be left out when ok is true"},
		{"not ok without error", `{"type":"command_result","id":"c","ok":false}`, wire.CodeInvalid, "command_result", "error", `is required when ok is false: say why command "c" failed`},
		{"ok missing", `{"type":"command_result","id":"c","task_no":"A"}`, wire.CodeInvalid, "command_result", "error", "is required when ok is false"},
	})
}

// TestDecodeErrorNamesTheJob ensures a refused job frame reports its
// task_no when it could be read, so the agent can answer job_ack
// rejected, and that no other type does.
func TestDecodeErrorNamesTheJob(t *testing.T) {
	for _, c := range []struct {
		frame, taskNo string
	}{
		{`{"type":"job","task_no":"A-1","printer":"k","payload":"!"}`, "A-1"},
		{`{"task_no":"A-2","copies":3,"type":"job","printer":"k","payload":"AQI="}`, "A-2"},
		{`{"type":"job","task_no":"A-3","printer":"k","payload":"AQI=","payload":"AQI="}`, "A-3"},
		// Two task_no: naming either could reject a job the cloud meant
		// under the other, so neither is named.
		{`{"type":"job","task_no":"A-8","printer":"k","payload":"AQI=","task_no":"A-9"}`, ""},
		{`{"type":"job","task_no":"A-4","printer":null}`, "A-4"},
		{`{"type":"job","task_no":"A-5","printer":"k","payload":"AQI="`, "A-5"},
		{`{"type":"job","printer":"k","payload":"AQI="}`, ""},
		{`{"type":"job","task_no":7,"printer":"k","payload":"AQI="}`, ""},
		{`{"task_no":"A-6","printer":"k","payload":"AQI=",`, ""}, // cut before its type
		{`{"type":"reprint","id":"c","task_no":"A-7","x":1}`, ""},
	} {
		_, err := wire.Decode([]byte(c.frame))
		if fe := frameError(t, err); fe.TaskNo != c.taskNo {
			t.Errorf("Decode(%s): TaskNo %q, want %q (%v)", c.frame, fe.TaskNo, c.taskNo, err)
		}
	}
}

// TestFrameErrorReply ensures the error frame answering a refusal carries
// its code, its one line and the refused type, and can always be sent.
func TestFrameErrorReply(t *testing.T) {
	_, err := wire.Decode([]byte(`{"type":"reprint","id":"c","task_no":"A","copies":2}`))
	fe := frameError(t, err)
	r := fe.Reply()
	want := &wire.Error{Code: wire.CodeUnknownField, FrameType: wire.TypeReprint,
		Message: "reprint frame: copies: is not a field of the reprint frame; the fields are id, task_no, type"}
	if *r != *want {
		t.Fatalf("Reply() = %#v, want %#v", r, want)
	}
	if _, err := wire.Encode(r); err != nil {
		t.Fatalf("the reply does not encode: %v", err)
	}
	if !errors.Is(err, err) || err.Error() != "decode: "+want.Message {
		t.Fatalf("Error() = %q", err)
	}
}
