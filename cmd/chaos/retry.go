package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"printgate/spool"
)

// Retries clicked twice: during the load a manager signs in
// to the agent's page every retryEvery and clicks Retry twice at once on a
// few tasks that ended without paper. So that there are such tasks in a
// short run too, each round also submits one probe task with a 1 s timeout
// to a printer without a backup that is out right now; it times out
// there, told, and a later round retries it. The check then wants one new
// version per double click, and the paper still holds each ticket at most
// once without the POSSIBLE DUPLICATE banner.
const (
	chaosPIN        = "chaos-manager-2468"
	retryEvery      = 10 * time.Second
	retriesPerRound = 3
	probeEvery      = 5 * time.Second
)

// setPIN sets the manager PIN through the binary, as a store would.
func (r *runner) setPIN(ctx context.Context, bin string) error {
	cmd := exec.CommandContext(ctx, bin, "pin", "set", "--config", r.cfgPath, "--pin-stdin")
	cmd.Stdin = strings.NewReader(chaosPIN + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: printgate pin set: %w\n%s", err, out)
	}
	return nil
}

// retryLoop clicks Retry twice on a few finished tasks each round until
// ctx ends; between rounds it looks every second for a printer to send a
// probe to, at most one probe every probeEvery.
func (r *runner) retryLoop(ctx context.Context) {
	next, lastProbe := time.Now().Add(retryEvery), time.Time{}
	for sleepUntil(ctx, time.Now().Add(time.Second)) {
		if time.Since(lastProbe) >= probeEvery && r.submitProbe(ctx) {
			lastProbe = time.Now()
		}
		if time.Now().After(next) {
			r.retryRound(ctx)
			next = time.Now().Add(retryEvery)
		}
	}
}

// retryRound picks up to retriesPerRound tasks of the run that ended
// without paper and were not retried yet, and double-clicks Retry on each.
// A round the agent's kill cuts short is simply tried again later.
func (r *runner) retryRound(ctx context.Context) {
	api, err := r.listTasks(ctx)
	if err != nil {
		return
	}
	var picks []string
	r.mu.Lock()
	for no, t := range api {
		if (t.State == spool.StateTimedOut || t.State == spool.StateFailed) && t.Origin != "manager" && r.retried[no] == nil {
			picks = append(picks, no)
		}
	}
	r.mu.Unlock()
	if len(picks) == 0 {
		return
	}
	sort.Strings(picks)
	if len(picks) > retriesPerRound {
		picks = picks[:retriesPerRound]
	}
	m, err := r.signIn(ctx)
	if err != nil {
		r.logf("retries: sign in: %v", err)
		return
	}
	for _, no := range picks {
		answers, err := m.retryTwice(ctx, no)
		if err != nil {
			r.logf("retries: %s: %v", no, err)
			continue
		}
		r.mu.Lock()
		r.retried[no] = answers
		r.mu.Unlock()
		r.logf("retries: Retry of %s clicked twice: led to %s", no, strings.Join(answers, " and "))
	}
}

// submitProbe submits one task with a 1 s timeout to a printer without a
// backup that is out now, if there is one: it will time out, and be
// retried. It reports whether it submitted one.
func (r *runner) submitProbe(ctx context.Context) bool {
	printer := -1
	r.mu.Lock()
	for i := range r.outSince {
		if _, has := backups[i]; !has && !r.outSince[i].IsZero() && printer < 0 && !isBackup(i) {
			printer = i
		}
	}
	no := fmt.Sprintf("RT%06d_v1", len(r.probes))
	r.mu.Unlock()
	if printer < 0 {
		return false
	}
	code, _ := r.api.Submit(ctx, map[string]any{"task_no": no, "printer": fmt.Sprintf("p%d", printer), "document": ticketDoc(no), "timeout": "1s"}, nil)
	if code != http.StatusAccepted && code != http.StatusOK {
		return false // not taken (the agent was being killed): nothing owed
	}
	r.mu.Lock()
	r.probes[no] = printer
	r.lanAnswer[no] = code
	r.mu.Unlock()
	return true
}

// isBackup reports whether printer i is another's backup: a task that
// times out there needs both out, which the probe cannot time.
func isBackup(i int) bool {
	for _, b := range backups {
		if b == i {
			return true
		}
	}
	return false
}

// manager is a signed-in page session.
type manager struct {
	base   string
	client *http.Client
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn signs in to the page with the run's PIN.
func (r *runner) signIn(ctx context.Context) (*manager, error) {
	jar, _ := cookiejar.New(nil)
	m := &manager{base: r.base, client: &http.Client{Timeout: 10 * time.Second, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	token, err := m.formToken(ctx, "/login")
	if err != nil {
		return nil, err
	}
	code, _, err := m.post(ctx, "/login", url.Values{"csrf": {token}, "pin": {chaosPIN}, "next": {"/"}})
	if err != nil {
		return nil, err
	}
	if code != http.StatusSeeOther {
		return nil, fmt.Errorf("sign in answered %d", code)
	}
	return m, nil
}

// formToken reads the CSRF token of the form at path.
func (m *manager) formToken(ctx context.Context, path string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.base+path, nil)
	resp, err := m.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	f := csrfField.FindSubmatch(b)
	if resp.StatusCode != http.StatusOK || f == nil {
		return "", fmt.Errorf("GET %s: %d without a form", path, resp.StatusCode)
	}
	return string(f[1]), nil
}

func (m *manager) post(ctx context.Context, path string, form url.Values) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := m.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location"), nil
}

// retryTwice opens the retry confirmation of task no and confirms it twice
// at once, as a double click does; it returns where each click led.
func (m *manager) retryTwice(ctx context.Context, no string) ([]string, error) {
	path := "/tasks/" + url.PathEscape(no) + "/retry"
	token, err := m.formToken(ctx, path)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	answers := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, loc, err := m.post(ctx, path, url.Values{"csrf": {token}})
			if err == nil && code != http.StatusSeeOther {
				err = fmt.Errorf("retry answered %d", code)
			}
			answers[i], errs[i] = loc, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return answers, nil
}

// checkRetries counts the double clicks and the versions they made: each
// made one at most (both clicks lead to the same version), and a version's
// marked copy is flagged on the version.
func checkRetries(o observed, res *Result, v *violations) {
	versions := map[string][]string{}
	for no, t := range o.API {
		if t.ReprintOf != "" && t.Origin == "manager" {
			versions[t.ReprintOf] = append(versions[t.ReprintOf], no)
		}
	}
	for _, no := range sortedKeys(o.Retried) {
		res.RetriedTwice++
		made := versions[no]
		res.RetryVersions += len(made)
		if len(made) > 1 {
			sort.Strings(made)
			v.add("a retry clicked twice made two versions", no, strings.Join(made, ", "))
		}
		if a := o.Retried[no]; len(a) == 2 && a[0] != a[1] {
			v.add("a retry clicked twice led to two tasks", no, a[0]+" and "+a[1])
		}
	}
}
