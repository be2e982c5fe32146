package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"printgate/agent"
	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/cmd/printgate/internal/screen"
	"printgate/cmd/printgate/internal/version"
)

func init() {
	register("test-print", command{summary: "print a test ticket on a configured printer and wait until it is on paper", run: runTestPrint})
}

// testPrintPoll is how often test-print asks for the task's state.
const testPrintPoll = 200 * time.Millisecond

func runTestPrint(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return testPrintCmd(ctx, time.Now, args, stdout, stderr)
}

// testPrintCmd is `printgate test-print NAME [--config FILE] [--wait 30s]`:
// it submits a test ticket through the local API, as a POS would, and
// follows the task until it is PRINTED or finished otherwise. now dates the
// ticket and its task_no.
func testPrintCmd(ctx context.Context, now func() time.Time, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("test-print", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file` of the agent to print through")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the ticket to print; the agent gives the task up after as long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate test-print NAME [--config FILE] [--wait 30s]")
		fmt.Fprintln(stderr, "\nPrints a test ticket on the configured printer NAME through the running agent:")
		fmt.Fprintln(stderr, "its profile, what it can confirm, the agent version, the time and a QR code.")
		fmt.Fprintln(stderr, "It prints the task_no (TEST_NAME_yyyymmdd-hhmmss), waits until the ticket is")
		fmt.Fprintln(stderr, "printed and exits 0, or exits 1 with the task's state and reason.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	name, code, done := oneArg(fs, args, stderr)
	if done {
		return code
	}
	if name == "" {
		fmt.Fprintln(stderr, "printgate test-print: which printer? give its NAME from the config (see printgate printers)")
		fs.Usage()
		return 2
	}
	if *wait < time.Second || *wait > 24*time.Hour {
		fmt.Fprintf(stderr, "printgate test-print: bad --wait %v: want 1s to 24h\n", *wait)
		return 2
	}
	cfg, c, ok := loadForAPI("test-print", *configPath, stderr)
	if !ok {
		return 1
	}
	pc, ok := cfg.Printer(name)
	if !ok {
		fmt.Fprintf(stderr, "printgate test-print: %s has no printer %q (it has %s)\n", cfg.Path, name, screen.PrinterNames(cfg))
		return 2
	}
	live, err := c.Printer(ctx, name)
	if err != nil {
		apiFailed(stderr, "test-print", "", cfg, err)
		return 1
	}
	if live == nil {
		fmt.Fprintf(stderr, "printgate test-print: the running agent has no printer %q, though %s has: it runs another config or has not reloaded it; restart the agent\n", name, cfg.Path)
		return 1
	}

	at := now()
	taskNo := "TEST_" + name + "_" + at.Format("20060102-150405")
	p := pc.Profile
	doc, err := agent.TestTicket{Printer: name, Profile: p, At: at, TaskNo: taskNo, Ruler: true, Details: [][2]string{
		{"URL", pc.Target.String()},
		{"State", live.State},
		{"Cutter", p.Cutter.String()},
		{"Confirms", fmt.Sprintf("%s (ack %s)", p.Ack.Confirmation(), p.Ack)},
		{"Agent", version.Version + " " + runtime.GOOS + "/" + runtime.GOARCH},
	}}.Document()
	if err != nil {
		fmt.Fprintf(stderr, "printgate test-print: %v\n", err)
		return 1
	}
	req := map[string]any{"task_no": taskNo, "printer": name, "priority": "urgent", "document": json.RawMessage(doc),
		// A ticket nobody waits for any more should not come out later.
		"timeout": wait.String()}
	var sub struct {
		TaskNo    string `json:"task_no"`
		State     string `json:"state"`
		Duplicate bool   `json:"duplicate"`
	}
	if _, err := c.Do(ctx, http.MethodPost, "/api/v1/tasks", req, &sub); err != nil {
		apiFailed(stderr, "test-print", "", cfg, err)
		return 1
	}
	fmt.Fprintln(stdout, taskNo)
	fmt.Fprintf(stdout, "waiting for %s to print on %s (%s)", taskNo, name, printerNow(name, live.State))

	dot := time.Now()
	last, err := c.WaitTask(ctx, taskNo, testPrintPoll, *wait, func(apiclient.Task) {
		if time.Since(dot) >= time.Second {
			fmt.Fprint(stdout, ".")
			dot = time.Now()
		}
	})
	switch {
	case err == nil && last.State == "PRINTED":
		on := last.Printer
		if last.Target != "" {
			on = last.Target // a backup printed it
		}
		fmt.Fprintf(stdout, "\nPRINTED on %s (confirmation: %s)\n", on, screen.OrDash(last.Confirmation))
		return 0
	case err == nil:
		fmt.Fprintln(stdout)
		fmt.Fprintf(stderr, "printgate test-print: %s is %s%s\n", taskNo, last.State, screen.Because(last))
	case errors.Is(err, apiclient.ErrAgentDown):
		fmt.Fprintln(stdout)
		apiFailed(stderr, "test-print", taskNo, cfg, err)
	case errors.Is(err, apiclient.ErrWaitOver):
		fmt.Fprintln(stdout)
		fmt.Fprintf(stderr, "printgate test-print: %s is still %s%s after %v; see printgate printers and printgate doctor\n", taskNo, screen.OrDash(last.State), screen.Because(last), *wait)
	default:
		fmt.Fprintln(stdout)
		fmt.Fprintf(stderr, "printgate test-print: stopped while %s was %s\n", taskNo, screen.OrDash(last.State))
	}
	return 1
}

// printerNow says what the printer's state means for the ticket just sent,
// in words that cannot be taken for the task's own state ("(state READY)"
// read like one).
func printerNow(name, state string) string {
	said, ok := map[string]string{
		"READY": "is ready", "BUSY": "is busy", "PAPER_OUT": "is out of paper", "COVER_OPEN": "has its cover open",
		"OFFLINE": "is offline", "ERROR": "reports an error", "UNKNOWN": "has not been read yet",
	}[state]
	if !ok {
		said = "is " + strings.ToLower(state)
	}
	if state == "READY" || state == "BUSY" {
		return "printer " + name + " " + said
	}
	return "printer " + name + " " + said + ": the ticket prints once it is ready"
}
