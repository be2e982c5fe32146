// Command benchcups measures printgate against CUPS, side by side in one
// run (`make bench-cups`): the same ESC/POS tickets go through
// `lp -d QUEUE -o raw` to a raw CUPS queue and through printgate's intake
// API to the real printgate binary, each path to its own emulated printer
// (drivers/printertest), so every byte on paper is attributed. It measures
// throughput and submit-to-paper latency, a burst from concurrent
// submitters, a printer killed mid-job, and the naive "push and forget"
// client against printgate under chaos faults, and prints a table and
// writes the figures as JSON.
//
// scripts/bench-cups.sh installs and starts CUPS, creates the queue
// (socket://127.0.0.1:PORT, raw) and runs this with -queue and -cups-addr.
//
//	benchcups -printgate bin/printgate -queue benchraw -cups-addr 127.0.0.1:19100 -json bench-cups.json
//
// With -mode raw (`make bench-cups-raw`) it instead measures
// printgate's raw port behind an unchanged CUPS raw queue: the same tickets
// through `lp -o raw` to -queue (socket:// straight at an emulator on
// -cups-addr) and to -raw-queue (socket:// at printgate's raw port on
// -raw-addr, whose printer is another emulator), latency and throughput of
// both, every ticket checked printed once and in order; exit 1 if not.
//
//	benchcups -mode raw -printgate bin/printgate -queue benchraw -cups-addr 127.0.0.1:19100 \
//		-raw-queue benchraw-pg -raw-addr 127.0.0.1:19101 -n 1000 -json bench-cups-raw.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// config is the command line.
type config struct {
	mode         string
	printgate    string
	queue        string
	rawQueue     string
	rawAddr      string
	cupsAddr     string
	jsonOut      string
	n            int
	burst        int
	submitters   int
	items        int
	killItems    int
	killWatch    time.Duration
	chaosN       int
	chaosRate    float64
	dropRate     float64
	offlineRate  float64
	seed         uint64
	drainTimeout time.Duration
	phases       map[string]bool
}

// run is main without the process: 0 ok, 1 the bench could not run, 2 usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchcups", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.mode, "mode", "compare", "compare: printgate's HTTP intake against CUPS; raw: a CUPS raw queue through printgate's raw port against one straight to the printer")
	fs.StringVar(&c.printgate, "printgate", "", "the printgate binary to run (required)")
	fs.StringVar(&c.queue, "queue", "benchraw", "the raw CUPS queue, whose device is socket://CUPS-ADDR")
	fs.StringVar(&c.cupsAddr, "cups-addr", "", "loopback address the CUPS queue prints to; the CUPS emulator listens there (required)")
	fs.StringVar(&c.rawQueue, "raw-queue", "benchraw-pg", "-mode raw: the raw CUPS queue whose device is socket://RAW-ADDR")
	fs.StringVar(&c.rawAddr, "raw-addr", "", "-mode raw: loopback address of printgate's raw port, which the -raw-queue prints to (required with -mode raw)")
	fs.StringVar(&c.jsonOut, "json", "bench-cups.json", "file for the results as JSON (empty: none)")
	fs.IntVar(&c.n, "n", 1000, "tickets submitted one after another, per system")
	fs.IntVar(&c.burst, "burst", 1000, "tickets in the burst, per system")
	fs.IntVar(&c.submitters, "submitters", 8, "concurrent submitters in the burst")
	fs.IntVar(&c.items, "items", 20, "item lines per ticket (about 40 bytes each)")
	fs.IntVar(&c.killItems, "kill-items", 300, "item lines in the ticket whose printer is killed")
	fs.DurationVar(&c.killWatch, "kill-watch", 35*time.Second, "how long to watch the killed job after the printer returns (CUPS retries a failed job after 30 s)")
	fs.IntVar(&c.chaosN, "chaos-n", 500, "tickets per path under chaos faults")
	fs.Float64Var(&c.chaosRate, "chaos-rate", 20, "tickets per second under chaos faults")
	fs.Float64Var(&c.dropRate, "drop-rate", 0.15, "share of jobs whose connection is dropped mid-job under chaos")
	fs.Float64Var(&c.offlineRate, "offline-rate", 0.1, "chance per second that the printer goes offline for 2-6 s under chaos")
	fs.Uint64Var(&c.seed, "seed", 0, "chaos seed (0: from the clock; printed)")
	fs.DurationVar(&c.drainTimeout, "drain-timeout", 120*time.Second, "longest wait for a phase's tickets to come out")
	phases := fs.String("phases", "seq,burst,kill,chaos", "the measurements to run, comma-separated")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c.phases = map[string]bool{}
	for _, ph := range strings.Split(*phases, ",") {
		switch ph = strings.TrimSpace(ph); ph {
		case "seq", "burst", "kill", "chaos":
			c.phases[ph] = true
		default:
			fmt.Fprintf(stderr, "benchcups: -phases: unknown phase %q (seq, burst, kill, chaos)\n", ph)
			return 2
		}
	}
	if c.printgate == "" || c.cupsAddr == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "benchcups: -printgate and -cups-addr are required; no arguments")
		fs.Usage()
		return 2
	}
	switch c.mode {
	case "compare":
	case "raw":
		if c.rawAddr == "" {
			fmt.Fprintln(stderr, "benchcups: -mode raw needs -raw-addr")
			return 2
		}
		return runRaw(ctx, c, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "benchcups: -mode %q: compare or raw\n", c.mode)
		return 2
	}
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
	}
	res, err := bench(ctx, c, stdout)
	if res != nil {
		printTable(stdout, res)
		if !writeJSON(c.jsonOut, res, stdout, stderr) {
			return 1
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "benchcups:", err)
		return 1
	}
	return 0
}

// runRaw is run for -mode raw: the table, the JSON, and exit 1 when a ticket
// was not printed exactly once and in order on either path.
func runRaw(ctx context.Context, c config, stdout, stderr io.Writer) int {
	res, err := benchRaw(ctx, c, stdout)
	if res != nil {
		printRawTable(stdout, res)
		if !writeJSON(c.jsonOut, res, stdout, stderr) {
			return 1
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "benchcups:", err)
		return 1
	}
	if bad := rawFailed(res); bad != "" {
		fmt.Fprintln(stderr, "benchcups: not every ticket printed once and in order:", bad)
		return 1
	}
	return 0
}

// writeJSON writes the results to path (-json) when one is given, and
// reports whether that went well.
func writeJSON(path string, res any, stdout, stderr io.Writer) bool {
	if path == "" {
		return true
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(stderr, "benchcups:", err)
		return false
	}
	fmt.Fprintf(stdout, "\nresults written to %s\n", path)
	return true
}
