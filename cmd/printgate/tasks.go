package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"printgate/agent/apiclient"
	"printgate/agent/config"
	"printgate/cmd/printgate/internal/screen"
)

func init() {
	register("tasks", command{summary: "list the agent's recent print tasks, newest first (through the local API)", run: withSignals(tasksCmd)})
	register("reprint", command{summary: "print a task again as a new version (through the local API)", run: withSignals(reprintCmd)})
}

// tasksPage is the largest page the API serves (localapi maxLimit).
const tasksPage = 1000

// tasksCmd is `printgate tasks [--config FILE] [--state S] [--printer P]
// [-n N]`: the last N tasks the agent holds, newest first. The API lists in
// accept order only, so it reads every page and keeps the last N.
func tasksCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tasks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file` of the agent to ask")
	state := fs.String("state", "", "only tasks in this `state` (ACCEPTED, QUEUED, SENDING, PRINTED, RETRY_WAIT, UNKNOWN, HELD, PARKED, TIMED_OUT, FAILED, CANCELED)")
	printer := fs.String("printer", "", "only tasks for this `printer` (or printed there on failover)")
	n := fs.Int("n", 20, "show at most `N` tasks, the newest")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate tasks [--config FILE] [--state S] [--printer P] [-n N]")
		fmt.Fprintln(stderr, "\nLists the tasks the running agent holds, newest first: task_no, state,")
		fmt.Fprintln(stderr, "printer, origin, attempts and when it was accepted. Finished tasks stay")
		fmt.Fprintln(stderr, "listed for the spool's retention (7 days by default).")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if *n < 1 {
		fmt.Fprintf(stderr, "printgate tasks: bad -n %d: want 1 or more\n", *n)
		return 2
	}
	cfg, c, ok := loadForAPI("tasks", *configPath, stderr)
	if !ok {
		return 1
	}
	q := url.Values{}
	if *state != "" {
		q.Set("state", strings.ToUpper(*state))
	}
	if *printer != "" {
		q.Set("printer", *printer)
	}
	var last []apiclient.Task // the newest *n, oldest first
	err := apiclient.ListTasks(ctx, c, q, tasksPage, func(page []apiclient.Task) {
		last = append(last, page...)
		if len(last) > *n {
			last = append(last[:0], last[len(last)-*n:]...)
		}
	})
	if err != nil {
		var ae *apiclient.Error
		if errors.As(err, &ae) && ae.Code == "bad_query" {
			fmt.Fprintf(stderr, "printgate tasks: %s\n", ae.Message)
			return 2
		}
		apiFailed(stderr, "tasks", "", cfg, err)
		return 1
	}
	if len(last) == 0 {
		fmt.Fprintln(stdout, "no tasks")
		return 0
	}
	screen.Tasks(stdout, last)
	return 0
}

// reprintCmd is `printgate reprint TASK_NO [--config FILE]`: the agent
// accepts a new version of the task (_vN → _vN+1), printed under the
// REPRINT banner.
func reprintCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reprint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file` of the agent to ask")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate reprint TASK_NO [--config FILE]")
		fmt.Fprintln(stderr, "\nAsks the running agent to print the task again: it takes a new version of it")
		fmt.Fprintln(stderr, "(ORDER_v1 becomes ORDER_v2), printed under a REPRINT banner, and prints its")
		fmt.Fprintln(stderr, "task_no and state. `printgate tasks` lists the task numbers.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	taskNo, code, done := oneArg(fs, args, stderr)
	if done {
		return code
	}
	if taskNo == "" {
		fmt.Fprintln(stderr, "printgate reprint: which task? give its TASK_NO (see printgate tasks)")
		fs.Usage()
		return 2
	}
	cfg, c, ok := loadForAPI("reprint", *configPath, stderr)
	if !ok {
		return 1
	}
	var t apiclient.Task
	if _, err := c.Do(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(taskNo)+"/reprint", nil, &t); err != nil {
		apiFailed(stderr, "reprint", taskNo, cfg, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s %s (reprint of %s on %s)\n", t.TaskNo, t.State, taskNo, t.Printer)
	return 0
}
