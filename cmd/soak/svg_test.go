package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// polylines parses doc as XML (failing on malformed markup) and returns
// the number of points of each polyline, by its data-series name.
func polylines(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	out := map[string]int{}
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		if se.Name.Local != "polyline" {
			continue
		}
		var name, pts string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "data-series":
				name = a.Value
			case "points":
				pts = a.Value
			}
		}
		for _, p := range strings.Fields(pts) {
			if len(strings.Split(p, ",")) != 2 {
				t.Errorf("%s: bad point %q", name, p)
			}
		}
		out[name] = len(strings.Fields(pts))
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return out
}

func TestWriteSVG(t *testing.T) {
	a := synth("rss", 37, 30, func(t float64) float64 { return 20 << 20 })
	a.Unit = "B"
	b := synth("goroutines & <friends>", 37, 30, func(t float64) float64 { return 30 + math.Sin(t) })
	c := synth("accepted", 37, 30, func(t float64) float64 { return t * 10 })
	d := synth("printed", 37, 30, func(t float64) float64 { return t*10 - 5 })
	d.V[3] = math.NaN() // an unreadable sample is left out
	var buf bytes.Buffer
	err := WriteSVG(&buf, `soak "test" <1h>`, []Panel{
		{Title: "rss", Series: []Series{a}, Verdict: "PASS"},
		{Title: "goroutines", Series: []Series{b}},
		{Title: "tasks", Series: []Series{c, d}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := polylines(t, buf.Bytes())
	want := map[string]int{"rss": 37, "goroutines & <friends>": 37, "accepted": 37, "printed": 36}
	if len(got) != len(want) {
		t.Errorf("polylines %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d points, want %d", k, got[k], n)
		}
	}
	if n := strings.Count(buf.String(), `class="panel"`); n != 3 {
		t.Errorf("%d panels, want 3", n)
	}
}

func TestWriteSVGEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, "empty", []Panel{{Title: "nothing", Series: []Series{{Name: "x"}}}}); err != nil {
		t.Fatal(err)
	}
	if got := polylines(t, buf.Bytes()); got["x"] != 0 {
		t.Errorf("points %v", got)
	}
}

func TestNiceTicks(t *testing.T) {
	got := niceTicks(0, 37)
	if got[0] != 0 || got[len(got)-1] < 37 || len(got) < 3 || len(got) > 8 {
		t.Errorf("niceTicks(0, 37) = %v", got)
	}
}
