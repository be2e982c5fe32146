// Command webhooksink is the small webhook receiver `make demo` starts: it
// listens on a loopback address, checks each delivery's Standard Webhooks
// signature with the endpoint's secret, prints one line per message to the
// terminal and answers 204 (a message that fails its check is answered 401
// and printed as refused, so the hub retries it).
//
//	webhooksink -listen 127.0.0.1:18650 -secret-file hook.secret
//
// It is a demo's receiver, not a product: a chain's order system verifies
// with its Standard Webhooks library (docs/HUB.md, "Webhooks").
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"printgate/hub/store"
	"printgate/hub/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// maxBody bounds a delivery's body: the hub's messages are a few hundred
// bytes.
const maxBody = 1 << 20

// run is main without the process: 0 stopped, 1 could not listen, 2 usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhooksink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:18650", "loopback `address` to listen on")
	secretFile := fs.String("secret-file", "", "`file` holding the endpoint's signing secret (whsec_…), as `printgate-hub webhook add` printed it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	host, _, err := net.SplitHostPort(*listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(stderr, "webhooksink: -listen %q is not a loopback address\nfix: webhooksink -listen 127.0.0.1:18650 -secret-file FILE\n", *listen)
		return 2
	}
	raw, err := os.ReadFile(*secretFile)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(raw)), webhook.SecretPrefix) {
		fmt.Fprintf(stderr, "webhooksink: -secret-file %q holds no whsec_ secret (%v)\nfix: printgate-hub webhook add --tenant ID --url http://%s/ > FILE, then webhooksink -secret-file FILE\n", *secretFile, err, *listen)
		return 2
	}
	secret := strings.TrimSpace(string(raw))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "webhooksink: %v\nfix: stop what listens on %s, or pass another -listen\n", err, *listen)
		return 1
	}
	var mu sync.Mutex // one line at a time
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		id := r.Header.Get("webhook-id")
		mu.Lock()
		defer mu.Unlock()
		if err := webhook.Verify(secret, id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body, time.Now(), 5*time.Minute); err != nil {
			fmt.Fprintf(stdout, "   webhook refused (%v): %s\n", err, id)
			http.Error(w, "signature", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(stdout, "   webhook ← %s (signature verified, webhook-id %s)\n", describe(body), id)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "webhooksink: %v\n", err)
		return 1
	}
	return 0
}

// describe is a message's line: its type, store, task_no and state.
func describe(body []byte) string {
	var m store.Message
	if err := json.Unmarshal(body, &m); err != nil || m.Data.TaskNo == "" {
		return fmt.Sprintf("%d bytes", len(body))
	}
	d := m.Data
	s := fmt.Sprintf("%s %s/%s %s", m.Type, d.Store, d.TaskNo, d.State)
	if d.Reason != "" {
		s += " (" + d.Reason + ")"
	}
	if d.Origin != "" {
		s += ", origin " + d.Origin
	}
	return s
}
