package cloudcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"printgate/sync/wire"
)

// maxAPIAnswer bounds what is read of one test API answer.
const maxAPIAnswer = 8 << 20

// testAPI is a client of the optional test API of PROTOCOL.md §7, rooted
// at base (http://host:port, no trailing slash).
type testAPI struct {
	base   string
	client *http.Client
}

// apiStatusError is a test API answer that was not the one expected.
type apiStatusError struct {
	method, path string
	status       int
	body         string
}

func (e *apiStatusError) Error() string {
	return fmt.Sprintf("test API %s %s: HTTP %d %s", e.method, e.path, e.status, strings.TrimSpace(e.body))
}

// do sends body (JSON-encoded unless it is already []byte or nil) and
// decodes a 2xx answer into out.
func (a *testAPI) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("test API %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return fmt.Errorf("test API %s %s: %w", method, path, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("test API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIAnswer))
	if err != nil {
		return fmt.Errorf("test API %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &apiStatusError{method, path, resp.StatusCode, string(data)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("test API %s %s: the answer is not the JSON §7 describes: %w", method, path, err)
	}
	return nil
}

func agentPath(id, rest string) string { return "/api/agents/" + url.PathEscape(id) + rest }

// probe reports whether base answers GET /api/agents as §7 says.
func (a *testAPI) probe(ctx context.Context) error {
	var out struct {
		Agents *[]json.RawMessage `json:"agents"`
	}
	if err := a.do(ctx, http.MethodGet, "/api/agents", nil, &out); err != nil {
		return err
	}
	if out.Agents == nil {
		return fmt.Errorf("test API GET /api/agents: no \"agents\" list in the answer")
	}
	return nil
}

func (a *testAPI) token(ctx context.Context, agentID string) (string, error) {
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := a.do(ctx, http.MethodPost, agentPath(agentID, "/token"), nil, &out); err != nil {
		return "", err
	}
	if out.AccessToken == "" {
		return "", fmt.Errorf("test API POST %s: no access_token in the answer", agentPath(agentID, "/token"))
	}
	return out.AccessToken, nil
}

func (a *testAPI) queue(ctx context.Context, agentID string, j wire.Job) error {
	frame, err := wire.Encode(&j)
	if err != nil {
		return fmt.Errorf("queue job %s: %w", j.TaskNo, err)
	}
	return a.do(ctx, http.MethodPost, agentPath(agentID, "/jobs"), frame, nil)
}

type apiQueued struct {
	Job   wire.Job `json:"job"`
	Sends int      `json:"sends"`
}

func (a *testAPI) jobs(ctx context.Context, agentID string) ([]apiQueued, error) {
	var out struct {
		Jobs []apiQueued `json:"jobs"`
	}
	err := a.do(ctx, http.MethodGet, agentPath(agentID, "/jobs"), nil, &out)
	return out.Jobs, err
}

func (a *testAPI) acks(ctx context.Context, agentID string) ([]wire.JobAck, error) {
	var out struct {
		Acks []wire.JobAck `json:"acks"`
	}
	err := a.do(ctx, http.MethodGet, agentPath(agentID, "/acks"), nil, &out)
	return out.Acks, err
}

type apiGap struct {
	TaskNo string `json:"task_no"`
	From   int    `json:"from"`
	To     int    `json:"to"`
}

type apiEvents struct {
	Events []wire.Event `json:"events"`
	Gaps   *[]apiGap    `json:"gaps"`
}

func (a *testAPI) events(ctx context.Context, agentID string) (apiEvents, error) {
	var out apiEvents
	err := a.do(ctx, http.MethodGet, agentPath(agentID, "/events"), nil, &out)
	return out, err
}

func (a *testAPI) command(ctx context.Context, agentID string, m wire.Message) error {
	frame, err := wire.Encode(m)
	if err != nil {
		return fmt.Errorf("command %s: %w", m.Type(), err)
	}
	return a.do(ctx, http.MethodPost, agentPath(agentID, "/commands"), frame, nil)
}

func (a *testAPI) results(ctx context.Context, agentID string) ([]wire.CommandResult, error) {
	var out struct {
		Results []wire.CommandResult `json:"results"`
	}
	err := a.do(ctx, http.MethodGet, agentPath(agentID, "/results"), nil, &out)
	return out.Results, err
}

func (a *testAPI) logLines(ctx context.Context, agentID, tailID string) ([]string, error) {
	var out struct {
		Lines []string `json:"lines"`
	}
	err := a.do(ctx, http.MethodGet, agentPath(agentID, "/logs/"+url.PathEscape(tailID)), nil, &out)
	return out.Lines, err
}

func (a *testAPI) revoke(ctx context.Context, agentID string) error {
	return a.do(ctx, http.MethodPost, agentPath(agentID, "/revoke"), nil, nil)
}

// decide approves, denies or expires a device code: verb is "approve",
// "deny" or "expire".
func (a *testAPI) decide(ctx context.Context, verb, userCode string) error {
	return a.do(ctx, http.MethodPost, "/oauth/device/"+verb+"?user_code="+url.QueryEscape(userCode), nil, nil)
}
