package agent

import (
	"context"
	"errors"
	"testing"

	"printgate/agent/api"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestKnownTaskNoForAnotherTicket ensures a duplicate is the same ticket
// (docs/DESIGN.md, invariant 12): a known task_no sent again through another door
// with the same printer and document (re-encoded with other white space) is
// its duplicate, and sent for another printer or with other content it is
// refused with an api.TaskNoTaken naming what differs.
func TestKnownTaskNoForAnotherTicket(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}, {name: "b", model: printertest.ModelEpson}}, "")
	h.submit("ORD-1", "k")
	ctx := context.Background()
	same := spool.NewTask{TaskNo: "ORD-1", Printer: "k", Origin: spool.OriginCloud,
		Document: []byte("{ \"lines\": [ {\"text\": \"TICKET ORD-1\"},\n {\"cut\": \"partial\"} ] }")}
	if _, dup, err := h.a.Submit(ctx, same); err != nil || !dup {
		t.Fatalf("the cloud's copy of the same ticket: dup=%v err=%v, want duplicate", dup, err)
	}
	for _, c := range []struct {
		nt   spool.NewTask
		code string
	}{
		{spool.NewTask{TaskNo: "ORD-1", Printer: "b", Origin: spool.OriginCloud, Document: same.Document}, api.CodeTaskNoOtherPrinter},
		{spool.NewTask{TaskNo: "ORD-1", Printer: "k", Origin: spool.OriginCloud, Document: []byte(`{"lines":[{"text":"ONE LINE"}]}`)}, api.CodeTaskNoOtherContent},
		{spool.NewTask{TaskNo: "ORD-1", Printer: "k", Origin: spool.OriginCloud, Payload: []byte("ONE LINE\n")}, api.CodeTaskNoOtherContent},
	} {
		_, dup, err := h.a.Submit(ctx, c.nt)
		var tt *api.TaskNoTaken
		if dup || !errors.As(err, &tt) || tt.Code() != c.code || tt.Origin != "local" {
			t.Errorf("%s on %s: dup=%v err=%v, want a TaskNoTaken %s", c.nt.TaskNo, c.nt.Printer, dup, err, c.code)
		}
	}
	if got, _ := h.sp.Get("ORD-1"); got.Origin != spool.OriginLocal || got.Printer != "k" {
		t.Errorf("the stored ticket changed: %+v", got)
	}
}

// TestReprintSkipsVersionOfAnotherTicket ensures a reprint whose next
// version number another door took for another ticket does not stop there
// (nor print as that ticket's duplicate): it takes the next free version.
func TestReprintSkipsVersionOfAnotherTicket(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.submit("ORD-2_v1", "k")
	h.submit("ORD-2_v2", "k", func(nt *spool.NewTask) {
		nt.Origin, nt.Document = spool.OriginCloud, []byte(`{"lines":[{"text":"ONE LINE"}]}`)
	})
	h.waitTask("ORD-2_v1", spool.StatePrinted)
	r, err := h.a.Reprint(context.Background(), "ORD-2_v1")
	if err != nil || r.TaskNo != "ORD-2_v3" || r.ReprintOf != "ORD-2_v1" {
		t.Fatalf("reprint: %+v %v, want ORD-2_v3", r, err)
	}
}
