package agent

import (
	"context"
	"errors"
	"testing"

	"printgate/agent/api"
	"printgate/spool"
)

// TestNoPrinters ensures an agent whose config names no printer yet (a
// fresh install that found none) starts, reports itself healthy and refuses
// tasks as for any unknown printer, instead of refusing to run.
func TestNoPrinters(t *testing.T) {
	h := newHarness(t, nil, "")
	if hl := h.a.Health(); hl.Status != "ok" {
		t.Errorf("health: %+v", hl)
	}
	if got := h.a.Printers(); len(got) != 0 {
		t.Errorf("printers: %+v", got)
	}
	_, _, err := h.a.Submit(context.Background(), spool.NewTask{TaskNo: "N_v1", Printer: "kitchen", Payload: []byte("x\n")})
	if !errors.Is(err, api.ErrUnknownPrinter) {
		t.Errorf("submit with no printers: %v, want unknown printer", err)
	}
}
