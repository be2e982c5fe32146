// Command chaos is `make chaos`: docs/DESIGN.md's stress model run against the
// real printgate binary on this computer. It starts 8 emulated printers
// (two with a backup), the reference cloud and the agent paired to it,
// submits tickets over the LAN API, as cloud jobs and (a quarter) as raw
// ESC/POS jobs to four printers' raw ports (a third of those write-and-close,
// in bursts, as POS libraries that do not wait send them) at the seeds' peak
// rate with bursts, and meanwhile drops printer connections mid-job, takes
// printers offline and out of paper, makes them flap, cuts the WAN, loses
// one events_ack in a hundred at the cloud, clicks Retry twice at once on
// the manager page on tasks that ended without paper, and SIGKILLs the
// agent. Then it brings everything back, waits for every
// accepted ticket to end and checks the promise: every accepted ticket
// printed exactly once, or again only under the POSSIBLE DUPLICATE banner,
// or its failure told to the API and the cloud. It prints a table like the
// seeds' and exits 1 on any violation.
//
//	go run ./cmd/chaos [--duration 10m] [--tasks 20000] [--rate 73] [--kills 12] [--seed N] [--out DIR] [--bin PATH]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := chaosMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// chaosMain parses the flags, runs and reports: 0 when the run found no
// violation, 1 when it did, 2 when it could not run.
func chaosMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := Options{}
	fs.DurationVar(&o.Duration, "duration", 10*time.Minute, "upper bound of the load and its faults; the drain adds at most --drain")
	fs.IntVar(&o.Tasks, "tasks", 20000, "tickets to submit: a quarter as raw jobs, the rest half over the LAN API, half as cloud jobs")
	fs.Float64Var(&o.Rate, "rate", 73, "arrivals per second outside the 300/s bursts (the seeds' peak: 80,000 in 30 minutes ≈ 44/s; their peak minute ≈ 73/s)")
	fs.IntVar(&o.Kills, "kills", 12, "times the agent is SIGKILLed and restarted, spread over the load")
	seed := fs.Uint64("seed", 0, "the seed of the whole schedule (0: from the clock)")
	fs.StringVar(&o.Out, "out", "", "`directory` for result.json and the agent's logs (default: none kept)")
	fs.StringVar(&o.Bin, "bin", "", "the printgate binary to run (default: built from ./cmd/printgate)")
	fs.DurationVar(&o.Drain, "drain", 2*time.Minute, "how long the drain may wait for every accepted ticket to end")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || o.Duration <= 0 || o.Tasks < 1 || o.Rate <= 0 || o.Kills < 0 {
		fmt.Fprintln(stderr, "usage: chaos [--duration D>0] [--tasks N≥1] [--rate R>0] [--kills K≥0] [--seed N] [--out DIR] [--bin PATH]")
		return 2
	}
	o.Seed = *seed
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	o.Log = stdout
	o.Command = fmt.Sprintf("go run ./cmd/chaos --seed %d --tasks %d --rate %g --kills %d --duration %s", o.Seed, o.Tasks, o.Rate, o.Kills, o.Duration)
	fmt.Fprintf(stdout, "chaos: seed %d\nchaos: replay with: %s\n", o.Seed, o.Command)
	res, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 2
	}
	writeTable(stdout, res)
	if o.Out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		path := filepath.Join(o.Out, "result.json")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "chaos: write %s: %v\n", path, err)
			return 2
		}
		fmt.Fprintf(stdout, "chaos: result in %s, the agent's logs beside it\n", path)
	}
	if len(res.Violations) > 0 {
		return 1
	}
	return 0
}

// writeTable prints the seeds' table (scheme, lost, duplicated, mean
// latency, peak CPU) and the details under it.
func writeTable(w io.Writer, r *Result) {
	pct := func(n int) string {
		if r.Accepted == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(r.Accepted))
	}
	fmt.Fprintf(w, "\n%-26s %-12s %-12s %-14s %-12s %-10s\n", "scheme", "lost", "duplicated", "mean latency", "p99 latency", "peak CPU")
	fmt.Fprintf(w, "%-26s %-12s %-12s %-14s %-12s %-10s\n", "printgate (chaos run)",
		fmt.Sprintf("%d (%s)", r.Lost, pct(r.Lost)), fmt.Sprintf("%d (%s)", r.Unmarked, pct(r.Unmarked)),
		fmt.Sprintf("%.3fs", r.LatencyMeanMS/1000), fmt.Sprintf("%.3fs", r.LatencyP99MS/1000), fmt.Sprintf("%.0f%%", r.PeakCPU))
	rows := [][2]string{
		{"seed", fmt.Sprint(r.Seed)},
		{"command", r.Command},
		{"elapsed", r.Elapsed},
		{"tasks planned / accepted", fmt.Sprintf("%d / %d (LAN %d, cloud %d)", r.Planned, r.Accepted, r.AcceptedLAN, r.AcceptedCloud)},
		{"refused", fmt.Sprint(r.Refused)},
		{"printed (on paper)", fmt.Sprint(r.Printed)},
		{"lost", fmt.Sprint(r.Lost)},
		{"unmarked duplicates", fmt.Sprint(r.Unmarked)},
		{"marked duplicates", fmt.Sprintf("%d (bound %d: drops %d + kills %d × 8 printers + spells %d)", r.Marked, r.MarkedBound, r.DropsFired, r.Kills, r.Spells)},
		{"timed out", fmt.Sprintf("%d (%d of them on paper anyway, %d held after %d outcomes in doubt)", r.TimedOut, r.TimedOutOnPaper, r.TimedOutHeld, maxUnknown)},
		{"failed / canceled", fmt.Sprintf("%d / %d", r.Failed, r.Canceled)},
		{"accept→paper latency", fmt.Sprintf("mean %.0f ms, p50 %.0f ms, p99 %.0f ms, max %.0f ms", r.LatencyMeanMS, r.LatencyP50MS, r.LatencyP99MS, r.LatencyMaxMS)},
		{"  without spell or kill", fmt.Sprintf("%d tasks: p50 %.0f ms, p99 %.0f ms", r.QuietTasks, r.QuietLatencyP50MS, r.QuietLatencyP99MS)},
		{"agent peak CPU / RSS", fmt.Sprintf("%.0f%% of a core / %.1f MiB", r.PeakCPU, r.PeakRSSMiB)},
		{"kills (SIGKILL)", fmt.Sprint(r.Kills)},
		{"mid-job drops", fmt.Sprint(r.DropsFired)},
		{"printer spells", fmt.Sprint(r.Spells)},
		{"WAN down", fmt.Sprintf("%.0f%% of the load", 100*r.WANDownShare)},
		{"cloud events", fmt.Sprint(r.CloudEvents)},
		{"retries clicked twice", fmt.Sprintf("%d double clicks on Retry made %d new versions", r.RetriedTwice, r.RetryVersions)},
		{"cloud acks lost on purpose", fmt.Sprintf("%d (1 batch in %d; each resent after the link's ack timeout)", r.AcksDropped, ackDropEvery)},
		{"raw jobs sent / acked", fmt.Sprintf("%d / %d (resends %d, first attempts reset on purpose %d, never sent %d; %d raw tasks in the API)", r.RawSent, r.RawAcked, r.RawResends, r.RawAborted, r.RawNotSent, r.RawTasks)},
		{"raw on paper", fmt.Sprintf("%d acked tags printed, %d told failed; %d marked duplicates, %d truncated (INCOMPLETE JOB)", r.RawPrinted, r.RawTold, r.RawMarked, r.RawTruncated)},
		{"raw never acked", fmt.Sprintf("%d (%d of them on paper) %s", r.RawUnacked, r.RawUnackedPrinted, strings.Join(r.RawUnackedTags, "; "))},
		{"raw write-and-close", fmt.Sprintf("%d in bursts: %d printed or told, %d written just before a kill and not on paper", r.RawBlind, r.RawBlindPrinted, r.RawBlindAtKill)},
	}
	rows = append(rows, keptOpenRows(r)...)
	fmt.Fprintln(w)
	for _, row := range rows {
		fmt.Fprintf(w, "  %-26s %s\n", row[0], row[1])
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "\nchaos: no violations")
		return
	}
	fmt.Fprintf(w, "\nchaos: %d kinds of violation:\n  %s\n", len(r.Violations), strings.Join(r.Violations, "\n  "))
}
