// Command soak runs the real printgate agent for hours under a steady load
// with light printer faults and records whether its resources level off:
// RSS, goroutines, open file descriptors and the spool file, sampled at a
// fixed interval into a CSV, plotted as an SVG drawn here (no plotting
// library), and judged at the end (`make soak`).
//
//	go run ./cmd/soak [--duration 2h] [--rate 10] [--sample 1m] [--out docs/benchmarks]
//
// The printers are emulated in this process (drivers/printertest on
// 127.0.0.1); --judge re-reads a recorded CSV and judges and plots it
// again without running anything. The agent is a separate process, built here unless --bin
// names one. It exits 1 when a series keeps growing or an accepted task
// never printed, 2 on a setup error. Linux only: it reads /proc.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout)
	stop()
	os.Exit(code)
}

// run parses args, runs the soak and prints the report to out; it returns
// the process exit code.
func run(ctx context.Context, args []string, out io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(out)
	var o Options
	fs.DurationVar(&o.Duration, "duration", 2*time.Hour, "how long to load the agent")
	fs.Float64Var(&o.Rate, "rate", 10, "tasks submitted per second")
	fs.DurationVar(&o.Sample, "sample", time.Minute, "time between samples")
	fs.StringVar(&o.Out, "out", "docs/benchmarks", "directory for soak.csv and soak.svg")
	fs.StringVar(&o.Bin, "bin", "", "printgate binary to run (default: build ./cmd/printgate)")
	fs.Uint64Var(&o.Seed, "seed", 0, "fault schedule seed (default: from the clock; printed)")
	fs.DurationVar(&o.Retention, "retention", 10*time.Minute, "spool retention in the agent's config")
	fs.BoolVar(&o.Keep, "keep", false, "keep the agent's data directory (spool, log) after the run")
	judgeCSV := fs.String("judge", "", "judge and plot an existing soak.csv instead of running (writes soak.svg to --out)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if runtime.GOOS != "linux" {
		fmt.Fprintln(out, "soak: needs Linux (reads /proc/<pid>)")
		return 2
	}
	if *judgeCSV != "" {
		rep, err := Rejudge(*judgeCSV, o)
		if err != nil {
			fmt.Fprintf(out, "soak: %v\n", err)
			return 2
		}
		printReport(out, rep)
		if !rep.Pass() {
			return 1
		}
		return 0
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	rep, err := Soak(ctx, o, out)
	if err != nil {
		fmt.Fprintf(out, "soak: %v\n", err)
		if errors.Is(err, errSetup) {
			return 2
		}
		return 1
	}
	if !rep.Pass() {
		return 1
	}
	return 0
}
