package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSoakShortRun runs the whole tool for 20 s at 10 tasks/s against the
// real binary: every accepted task must print, the CSV must hold a row per
// sample, and the plot must be well-formed with a point per sample.
func TestSoakShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary for 20 s")
	}
	bin := filepath.Join(t.TempDir(), "printgate")
	cmd := exec.Command("go", "build", "-o", bin, "printgate/cmd/printgate")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	out := t.TempDir()
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Soak(ctx, Options{Duration: 20 * time.Second, Rate: 10, Sample: 2 * time.Second, Out: out, Bin: bin, Seed: 7, Retention: 10 * time.Minute}, &log)
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, log.String())
	}
	t.Logf("\n%s", log.String())
	// The pace is 10 per second of load (which runs a little past the 20 s,
	// until the last sample is taken); a loaded machine may answer fewer.
	if most := int(10*rep.Ran.Seconds()) + 3; rep.Accepted < 150 || rep.Accepted > most {
		t.Errorf("accepted %d in %s, want about 200 and at most %d", rep.Accepted, rep.Ran, most)
	}
	if rep.Printed != rep.Accepted || len(rep.Missing) != 0 || rep.UnmarkedDups != 0 {
		t.Errorf("printed %d of %d, missing %v, unmarked duplicates %d", rep.Printed, rep.Accepted, rep.Missing, rep.UnmarkedDups)
	}
	if len(rep.Verdicts) != 4 {
		t.Errorf("verdicts %+v", rep.Verdicts)
	}
	if rep.AgentExitNote != "" {
		t.Errorf("agent did not stop cleanly: %s", rep.AgentExitNote)
	}
	f, err := os.Open(filepath.Join(out, "soak.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// A sample at the start, one every 2 s, one at the end.
	samples := len(rows) - 1
	if samples < 10 || samples > 13 || len(rows[0]) != len(csvHeader) {
		t.Fatalf("csv: %d samples, header %v", samples, rows[0])
	}
	for _, r := range rows[1:] {
		for i, cell := range r {
			if cell == "" {
				t.Errorf("csv row %v: %s empty (not read)", r, csvHeader[i])
			}
		}
	}
	if last := rows[len(rows)-1]; last[7] != last[8] && rep.Printed == rep.Accepted {
		t.Logf("last sample taken before the drain: accepted %s printed %s", last[7], last[8])
	}
	svg, err := os.ReadFile(filepath.Join(out, "soak.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range polylines(t, svg) {
		if n != samples {
			t.Errorf("plot %s: %d points, want %d", name, n, samples)
		}
	}
}
