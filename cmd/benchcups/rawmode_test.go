package main

import (
	"strings"
	"testing"

	"printgate/drivers/printertest"
)

// paperOf is what an emulator makes of jobs sent one after another.
func paperOf(tags ...string) []printertest.Ticket {
	var stream []byte
	for _, tag := range tags {
		stream = append(stream, ticketBytes(tag, 2)...)
	}
	tickets, _ := printertest.Parse(stream, false)
	return tickets
}

func TestOutOfOrder(t *testing.T) {
	lp := []string{"RV0000", "RV0001", "RV0002"}
	for _, c := range []struct {
		name  string
		paper []string
		want  int
	}{
		{"in order, earlier runs ignored", []string{"WV0", "RV0000", "RV0001", "RV0002"}, 0},
		{"two swapped", []string{"RV0000", "RV0002", "RV0001"}, 2},
		{"one missing", []string{"RV0000", "RV0002"}, 2},
		{"one printed twice", []string{"RV0000", "RV0001", "RV0001", "RV0002"}, 2},
	} {
		if got := outOfOrder(paperOf(c.paper...), "RV", lp); got != c.want {
			t.Errorf("%s: %d out of order, want %d", c.name, got, c.want)
		}
	}
}

func TestRawFailed(t *testing.T) {
	good := rawPath{Path: "p", N: 3, Once: 3, InOrder: true}
	r := &rawResults{Direct: good, Printgate: good, DirectOne: good, ViaOne: good}
	if s := rawFailed(r); s != "" {
		t.Errorf("all printed once and in order: %q, want nothing", s)
	}
	for _, bad := range []func(p *rawPath){
		func(p *rawPath) { p.Once = 2 },
		func(p *rawPath) { p.Extra = 1 },
		func(p *rawPath) { p.InOrder, p.OutOfOrder = false, 2 },
		func(p *rawPath) { p.Unfinished = 1 },
	} {
		rr := *r
		bad(&rr.ViaOne)
		if s := rawFailed(&rr); s == "" || !strings.Contains(s, "p:") {
			t.Errorf("%+v passed as good", rr.ViaOne)
		}
	}
	// A run that did not happen (-n 0 never does, but a phase left out)
	// is not a failure.
	r.DirectOne = rawPath{}
	if s := rawFailed(r); s != "" {
		t.Errorf("a path not run: %q", s)
	}
}
