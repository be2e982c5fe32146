package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"

	"printgate/agent/apiclient"
	"printgate/agent/config"
)

func init() {
	register("logs", command{summary: "show the agent's recent log lines, or follow them (-f), through its API", run: withSignals(logsCmd, os.Interrupt, syscall.SIGTERM)})
}

// logsUsage is the usage line and what the command does.
const logsUsage = `usage: printgate logs [--config FILE] [-f] [--level L] [--grep TEXT] [-n LINES]

Shows the running agent's recent log lines, redacted (no tokens or PINs),
as the manager page's log tail shows them. It asks the agent's local API
(listen, tls and api_token of the config) for them, so the agent must be
running. With -f it goes on showing new lines until Ctrl-C.`

// logsCmd is `printgate logs`: it reads GET /api/v1/logs and copies the
// lines to stdout until the answer ends or, following, until ctx ends.
func logsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the agent's config `file`: where its API listens and its api_token")
	follow := fs.Bool("f", false, "follow: keep showing new lines as they are logged, until Ctrl-C")
	level := fs.String("level", "info", "the least severe `level` shown: debug, info, warn or error")
	grep := fs.String("grep", "", "show only lines holding this `text` (any case)")
	lines := fs.Int("n", 100, "how many recent `lines` to show first, 0 to 1000")
	fs.Usage = func() {
		fmt.Fprintln(stderr, logsUsage)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	switch strings.ToLower(*level) {
	case "debug", "info", "warn", "error":
	default:
		fmt.Fprintf(stderr, "printgate logs: --level %q is not one of debug, info, warn, error\n", *level)
		return 2
	}
	if *lines < 0 || *lines > 1000 {
		fmt.Fprintf(stderr, "printgate logs: -n %d: give 0 to 1000 lines\n", *lines)
		return 2
	}
	cfg, ok := loadConfig("logs", *configPath, stderr)
	if !ok {
		return 1
	}
	// No request timeout: a follow lasts until Ctrl-C.
	client, err := apiclient.ForConfig(cfg, 0)
	if err != nil {
		fmt.Fprintf(stderr, "printgate logs: %v\n", err)
		return 1
	}
	err = client.Logs(ctx, apiclient.LogQuery{Level: *level, Grep: *grep, Lines: *lines, Follow: *follow}, stdout)
	if ctx.Err() != nil {
		return 0 // Ctrl-C: the normal end of a follow
	}
	var refused *apiclient.Error
	if errors.As(err, &refused) && refused.Status != http.StatusUnauthorized {
		err = answerError(client.Base(), cfg, refused)
	}
	if err != nil {
		apiFailed(stderr, "logs", "", cfg, err)
		return 1
	}
	return 0
}

// answerError says what to do about the agent's refusal e to send its log.
func answerError(base string, cfg *config.Config, e *apiclient.Error) error {
	switch e.Status {
	case http.StatusNotFound:
		return fmt.Errorf("the agent at %s does not serve its log over the API (%s); it may be an older version: read the log file %s instead", base, e.Message, cfg.Log.File)
	}
	return fmt.Errorf("the agent at %s answered %d %s: %s", base, e.Status, http.StatusText(e.Status), e.Message)
}
