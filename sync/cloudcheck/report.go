package cloudcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Status is a check's verdict.
type Status string

// The verdicts of a check.
const (
	// Pass: the cloud did what the contract asks.
	Pass Status = "pass"
	// Fail: the cloud did something else; Seen says what.
	Fail Status = "fail"
	// Skip: the check could not run against this cloud (no test API, no
	// --auth-url, an earlier step failed); Seen says why.
	Skip Status = "skip"
)

// Result is one check's verdict and what was seen.
type Result struct {
	// Name is the check's stable name, "group.check" (handshake.welcome).
	Name string `json:"name"`
	// Status is pass, fail or skip.
	Status Status `json:"status"`
	// Seen says what the check saw, or why it was skipped, in a sentence.
	Seen string `json:"seen"`
	// Fix, for some failures, says what the cloud should do instead.
	Fix string `json:"fix,omitempty"`
	// Millis is how long the check took, in milliseconds.
	Millis int64 `json:"ms"`
}

// Report is the outcome of a run: every check in a fixed order.
type Report struct {
	// Cloud is the websocket URL checked.
	Cloud string `json:"cloud"`
	// AuthURL is the device flow's base URL, empty when not given.
	AuthURL string `json:"auth_url,omitempty"`
	// TestAPI is the test API's base URL (PROTOCOL.md §7), empty when the
	// cloud has none.
	TestAPI string `json:"test_api,omitempty"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Checks are the verdicts, in the order of Names.
	Checks []Result `json:"checks"`
	// Passed, Failed and Skipped count Checks by Status.
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// OK reports whether no check failed (skips are not failures).
func (r *Report) OK() bool { return r.Failed == 0 }

// Result returns the result named name, if the report has it.
func (r *Report) Result(name string) (Result, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Result{}, false
}

func (r *Report) count() {
	r.Passed, r.Failed, r.Skipped = 0, 0, 0
	for _, c := range r.Checks {
		switch c.Status {
		case Pass:
			r.Passed++
		case Fail:
			r.Failed++
		default:
			r.Skipped++
		}
	}
}

// WriteText writes the report for a person: one line per check, a fix:
// line under a failure that has one, then the counts.
func (r *Report) WriteText(w io.Writer) error {
	for _, c := range r.Checks {
		if _, err := fmt.Fprintf(w, "%s %s — %s\n", map[Status]string{Pass: "PASS", Fail: "FAIL", Skip: "SKIP"}[c.Status], c.Name, c.Seen); err != nil {
			return err
		}
		if c.Status == Fail && c.Fix != "" {
			if _, err := fmt.Fprintf(w, "     fix: %s\n", c.Fix); err != nil {
				return err
			}
		}
	}
	_, err := fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", r.Passed, r.Failed, r.Skipped)
	return err
}

// WriteJSON writes the report as one JSON object (PROTOCOL.md §7 gives
// its shape), for a CI.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
