package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"time"
)

// agentStartWait bounds how long a (re)started agent may take to answer
// /healthz: restoring a spool of twenty thousand tasks is part of it.
const agentStartWait = 60 * time.Second

// agentProc runs the real printgate binary and restarts it after a kill.
type agentProc struct {
	bin, config, base string
	out               io.Writer // the child's stdout and stderr
	client            *http.Client

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	killing bool          // the exit in progress is ours
	exits   []string      // exits nobody asked for
}

// start runs the binary and waits until it answers /healthz.
func (a *agentProc) start(ctx context.Context) error {
	cmd := exec.Command(a.bin, "run", "--config", a.config)
	cmd.Stdout, cmd.Stderr = a.out, a.out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the agent %s: %w", a.bin, err)
	}
	done := make(chan struct{})
	a.mu.Lock()
	a.cmd, a.done, a.killing = cmd, done, false
	a.mu.Unlock()
	go func() {
		err := cmd.Wait()
		a.mu.Lock()
		if !a.killing {
			a.exits = append(a.exits, fmt.Sprintf("pid %d exited on its own at %s: %v", cmd.Process.Pid, time.Now().Format(time.TimeOnly), err))
		}
		a.mu.Unlock()
		close(done)
	}()
	wctx, cancel := context.WithTimeout(ctx, agentStartWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(wctx, http.MethodGet, a.base+"/healthz", nil)
		if resp, err := a.client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return errors.New("the agent exited while starting (see its log)")
		case <-wctx.Done():
			return fmt.Errorf("the agent did not answer /healthz within %s: %w", agentStartWait, wctx.Err())
		case <-tick.C:
		}
	}
}

// kill SIGKILLs the running agent and waits for it to be gone.
func (a *agentProc) kill() {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.killing = true
	a.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill() // SIGKILL on Unix
	<-done
}

// pid is the running agent's process id, 0 when none runs.
func (a *agentProc) pid() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil || a.cmd.Process == nil {
		return 0
	}
	select {
	case <-a.done:
		return 0
	default:
	}
	return a.cmd.Process.Pid
}

// unexpectedExits lists the exits the runner did not cause.
func (a *agentProc) unexpectedExits() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.exits...)
}
