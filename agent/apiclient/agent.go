package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"printgate/agent/api"
)

// Status is what GET /healthz and GET /api/v1/printers tell of the agent:
// its health (also from a 503, the answer of an agent whose core failed)
// and each printer's state and queue.
func (c *Client) Status(ctx context.Context) (api.Health, []api.PrinterInfo, error) {
	var h api.Health
	resp, err := c.Open(ctx, http.MethodGet, "/healthz", nil)
	if err != nil {
		return h, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return h, nil, fmt.Errorf("GET %s/healthz: %s: %s", c.base, resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h); err != nil {
		return h, nil, fmt.Errorf("GET %s/healthz: %w", c.base, err)
	}
	var body struct {
		Printers []api.PrinterInfo `json:"printers"`
	}
	if _, err := c.Do(ctx, http.MethodGet, "/api/v1/printers", nil, &body); err != nil {
		return h, nil, err
	}
	return h, body.Printers, nil
}

// ReloadRefused is the agent's answer to a reload of a config with errors:
// it keeps its running config.
type ReloadRefused struct {
	Result api.ReloadResult
}

// Error says the reload was refused and why, as the CLI prints it.
func (e *ReloadRefused) Error() string {
	return fmt.Sprintf("the agent refused %s and keeps its running config", e.Result.Config)
}

// Reload is POST /api/v1/reload: the agent reads its config again and says
// what changed. A config it refuses is a *ReloadRefused with its errors;
// any other refusal an *Error.
func (c *Client) Reload(ctx context.Context) (api.ReloadResult, error) {
	var res api.ReloadResult
	resp, err := c.Open(ctx, http.MethodPost, "/api/v1/reload", nil)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return res, fmt.Errorf("read the agent's answer: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if err := json.Unmarshal(data, &res); err != nil {
			return res, fmt.Errorf("the agent's answer is not what printgate expects (%v)", err)
		}
		return res, nil
	case http.StatusUnprocessableEntity:
		var body struct {
			Result api.ReloadResult `json:"result"`
		}
		_ = json.Unmarshal(data, &body)
		return body.Result, &ReloadRefused{Result: body.Result}
	}
	return res, ErrorOf(resp.StatusCode, data)
}

// LogQuery is what Logs asks GET /api/v1/logs for.
type LogQuery struct {
	Level  string // the least severe level shown: debug, info, warn or error
	Grep   string // only lines holding this text (any case); "" for all
	Lines  int    // how many recent lines first
	Follow bool   // then new lines as they are logged, until ctx ends
}

// Logs copies the agent's log lines for q to w as they arrive: the recent
// ones, then, following, new ones until ctx ends, asking again (without
// the recent lines) each time the agent ends a follow after its log tail's
// maximum duration. It returns nil once the answer has ended or ctx has;
// an answer other than 200 is an *Error whose Message is the error body's
// message, or the body.
func (c *Client) Logs(ctx context.Context, q LogQuery, w io.Writer) error {
	v := url.Values{}
	v.Set("level", strings.ToLower(q.Level))
	if q.Grep != "" {
		v.Set("q", q.Grep)
	}
	v.Set("lines", strconv.Itoa(q.Lines))
	if q.Follow {
		v.Set("follow", "1")
	}
	for {
		ended, err := c.logs(ctx, v, w)
		if ctx.Err() != nil || err != nil || !q.Follow || !ended {
			return err
		}
		v.Set("lines", "0")
	}
}

// logs makes one request of Logs. ended reports that the agent ended the
// answer itself.
func (c *Client) logs(ctx context.Context, q url.Values, w io.Writer) (ended bool, err error) {
	resp, err := c.Open(ctx, http.MethodGet, "/api/v1/logs?"+q.Encode(), nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		e := ErrorOf(resp.StatusCode, body)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(body))
		}
		return false, e
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("the agent at %s stopped sending its log: %w", c.base, err)
	}
	return true, nil
}

// Terminal reports whether the task will not change any more.
func (t Task) Terminal() bool {
	switch t.State {
	case "PRINTED", "TIMED_OUT", "FAILED", "CANCELED":
		return true
	}
	return false
}

// ErrWaitOver ends WaitTask when its wait has passed with the task not
// yet terminal.
var ErrWaitOver = errors.New("the wait is over")

// WaitTask asks for the task every poll until it is terminal and returns
// it. It calls each after every question, with the task as last seen (an
// answer that is an error keeps the last one). It ends early with the last
// task seen and: an error wrapping ErrAgentDown when the agent stops
// answering, ctx's error when ctx ends, ErrWaitOver once wait has passed.
func (c *Client) WaitTask(ctx context.Context, taskNo string, poll, wait time.Duration, each func(Task)) (Task, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var last Task
	for {
		t, err := c.Task(ctx, taskNo)
		switch {
		case err != nil && errors.Is(err, ErrAgentDown):
			return last, err
		case err == nil:
			last = t
		}
		if last.Terminal() {
			return last, nil
		}
		if each != nil {
			each(last)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-deadline.C:
			return last, ErrWaitOver
		case <-tick.C:
		}
	}
}
