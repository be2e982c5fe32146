package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"printgate/agent/api"
	"printgate/sync/pair"
)

// Pairing bounds: how long asking the cloud for a code may take, and how
// long after a failed ask the page shows the failure before asking again
// (a page reloaded in a loop does not hammer an unreachable cloud).
const (
	pairStartTimeout = 20 * time.Second
	pairRetryGap     = 10 * time.Second
	pairHTTPTimeout  = 30 * time.Second
)

var errNotRunning = errors.New("the agent is not running")

// pairing runs the device flow the pairing page shows: at most one flow at
// a time, reused while its code is valid, a new one after it expires or
// fails. The flow's wait for approval is a goroutine bounded by Agent.Run:
// Run's end cancels it and waits for it.
type pairing struct {
	mu      sync.Mutex
	a       *Agent
	ctx     context.Context // Run's context; nil outside Run
	client  *http.Client
	flow    *pairFlow     // the flow whose code is shown; nil if none
	asking  chan struct{} // closed when the ask for a code in progress ends
	lastErr error         // why the last ask for a code failed
	retryAt time.Time     // no new ask before this, after a failure
	wg      sync.WaitGroup
}

// pairFlow is one device flow: its code, and how to stop its wait.
type pairFlow struct {
	p      *pair.Pending
	cancel context.CancelFunc
}

// begin makes flows possible for the life of Run's ctx.
func (pr *pairing) begin(a *Agent, ctx context.Context) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.a, pr.ctx = a, ctx
	if pr.client == nil {
		pr.client = &http.Client{Timeout: pairHTTPTimeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
}

// end stops the flow in progress and waits for its goroutine.
func (pr *pairing) end() {
	pr.mu.Lock()
	pr.ctx = nil
	if pr.flow != nil {
		pr.flow.cancel()
		pr.flow = nil
	}
	client := pr.client
	pr.mu.Unlock()
	pr.wg.Wait()
	if client != nil {
		client.CloseIdleConnections()
	}
}

// stopFlow ends the flow in progress, if any (the agent got paired another
// way: `printgate pair`).
func (pr *pairing) stopFlow() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.flow != nil {
		pr.flow.cancel()
		pr.flow = nil
	}
}

// pending returns the code to show, starting a flow if none is valid.
func (pr *pairing) pending(ctx context.Context, authURL string) (*pair.Pending, error) {
	for {
		pr.mu.Lock()
		if pr.ctx == nil {
			pr.mu.Unlock()
			return nil, errNotRunning
		}
		if f := pr.flow; f != nil {
			if f.p.Left() > 0 {
				pr.mu.Unlock()
				return f.p, nil
			}
			// Expired, and its wait has not noticed yet: stop it.
			f.cancel()
			pr.flow = nil
		}
		now := pr.a.opts.Clock.Now()
		if pr.lastErr != nil && now.Before(pr.retryAt) {
			err := pr.lastErr
			pr.mu.Unlock()
			return nil, err
		}
		if ch := pr.asking; ch != nil {
			// Someone is asking the cloud already: take their code.
			pr.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		pr.asking = ch
		runCtx, client, clock := pr.ctx, pr.client, pr.a.opts.Clock
		pr.mu.Unlock()

		sctx, cancel := context.WithTimeout(ctx, pairStartTimeout)
		stop := context.AfterFunc(runCtx, cancel)
		p, err := pair.StartClock(sctx, authURL, client, clock)
		stop()
		cancel()

		pr.mu.Lock()
		pr.asking = nil
		close(ch)
		if err != nil {
			pr.lastErr, pr.retryAt = err, pr.a.opts.Clock.Now().Add(pairRetryGap)
			pr.mu.Unlock()
			pr.a.log.Warn("pairing: could not get a code from the cloud", "err", err)
			return nil, err
		}
		pr.lastErr = nil
		if pr.ctx == nil {
			pr.mu.Unlock()
			return nil, errNotRunning
		}
		fctx, fcancel := context.WithCancel(pr.ctx)
		f := &pairFlow{p: p, cancel: fcancel}
		pr.flow = f
		pr.wg.Add(1)
		go pr.wait(fctx, f)
		pr.mu.Unlock()
		// The code itself is not logged: whoever reads it first can approve
		// it in the cloud with an account of their own, and the log reaches
		// every API-token holder (GET /api/v1/logs), the cloud's log tails
		// and the journal's readers. The signed-in manager who asked for it
		// sees it on the pairing page.
		pr.a.log.Info("pairing: code issued (shown on the manager page's Pairing tab), waiting for a manager to approve it", "expires", p.Expires)
		return p, nil
	}
}

// wait waits for f's approval and stores the token it brings.
func (pr *pairing) wait(ctx context.Context, f *pairFlow) {
	defer pr.wg.Done()
	defer f.cancel()
	a := pr.a
	tok, err := f.p.Wait(ctx)
	pr.mu.Lock()
	if pr.flow == f {
		pr.flow = nil
	}
	pr.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("pairing: the code was not approved; the pairing page asks for a new one", "err", err)
		}
		return
	}
	if err := pair.Save(a.cfg.DataDir, tok); err != nil {
		a.log.Error("pairing: approved, but the device token could not be saved; pair again", "err", err)
		pr.mu.Lock()
		pr.lastErr, pr.retryAt = err, time.Time{}
		pr.mu.Unlock()
		return
	}
	a.log.Info("pairing: approved; the device token is saved and the cloud link connects")
	if l := a.attached(); l != nil {
		l.CheckToken()
	}
	a.observe(Event{Link: true})
}

// Pairing describes the pairing for the pairing page. While the agent is
// unpaired and has a [cloud] auth_url it starts (or keeps) one device flow
// whose code the page shows; the token is saved once a manager approves.
func (a *Agent) Pairing(ctx context.Context) api.PairingInfo {
	c := a.cfg.Cloud
	if c == nil || c.AuthURL == "" {
		return api.PairingInfo{}
	}
	info := api.PairingInfo{Configured: true}
	_, err := pair.Load(a.cfg.DataDir)
	if err == nil {
		a.pairing.stopFlow()
		info.Paired = true
		if l := a.attached(); l != nil {
			info.Store = l.Stats().Store
		}
		return info
	}
	if !errors.Is(err, os.ErrNotExist) {
		// A damaged token file: pairing again replaces it.
		a.log.Warn("pairing: the stored device token is unusable; showing a new code", "err", err)
	}
	p, err := a.pairing.pending(ctx, c.AuthURL)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	info.UserCode, info.VerificationURI, info.VerificationURIComplete, info.Expires = p.UserCode, p.VerificationURI, p.VerificationURIComplete, p.Expires
	return info
}

// Unpair forgets the device token; the link waits for a new pairing once
// its current connection ends.
func (a *Agent) Unpair() error {
	if err := pair.Remove(a.cfg.DataDir); err != nil {
		return fmt.Errorf("unpair: %w", err)
	}
	a.log.Warn("pairing: a manager removed the device token; the agent is unpaired")
	if l := a.attached(); l != nil {
		l.CheckToken()
	}
	a.observe(Event{Link: true})
	return nil
}
