// Command cloudsim serves the reference cloud (sync/cloudtest, a test
// double of the printgate cloud, in memory) on a loopback address, for the
// demo and for integrators: the agent websocket, the device flow and the
// test API of PROTOCOL.md §7.
//
//	cloudsim -listen 127.0.0.1:8700
//	curl -X POST 127.0.0.1:8700/oauth/device/approve?user_code=BCDF-GHJK
//	curl -d '{"task_no":"T1_v1","printer":"kitchen","payload":"SGkK"}' 127.0.0.1:8700/api/agents/AGENT/jobs
//	curl 127.0.0.1:8700/api/agents
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"printgate/sync/cloudtest"
	"printgate/sync/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// run is main without the process: it returns the exit code (0 ok, 1
// runtime error, 2 usage). ready, if not nil, receives the address once
// it listens (for tests).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	fs := flag.NewFlagSet("cloudsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8700", "loopback address to serve on")
	ping := fs.Duration("ping", wire.PingInterval, "websocket ping interval")
	silence := fs.Duration("silence", wire.SilenceTimeout, "drop an agent silent for this long")
	poll := fs.Duration("poll", cloudtest.DefaultPollInterval, "device flow poll interval (whole seconds)")
	verbose := fs.Bool("v", false, "log every connection and refused frame")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cloudsim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *ping <= 0 || *silence <= *ping || *poll <= 0 {
		fmt.Fprintln(stderr, "cloudsim: -ping, -silence and -poll must be positive, and -silence longer than -ping")
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	ln, err := listenLoopback(*listen)
	if err != nil {
		fmt.Fprintln(stderr, "cloudsim:", err)
		return 1
	}
	cloud := cloudtest.New(cloudtest.Options{
		PingInterval: *ping, SilenceTimeout: *silence, PollInterval: *poll,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	srv := &http.Server{Handler: cloud.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "cloudsim: reference cloud (a test double, in memory) on %s\n", ln.Addr())
	fmt.Fprintf(stdout, "  agent websocket  ws://%s%s   ([cloud] url)\n", ln.Addr(), cloudtest.AgentPath)
	fmt.Fprintf(stdout, "  device flow      %s/oauth   ([cloud] auth_url; approve: POST /oauth/device/approve?user_code=...)\n", base)
	fmt.Fprintf(stdout, "  test API         %s/api/agents\n", base)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	code := 0
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintln(stderr, "cloudsim: serve:", err)
		code = 1
	}
	cloud.Close() // websocket connections are hijacked: Shutdown does not end them
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		srv.Close()
	}
	if code == 0 {
		<-served
	}
	return code
}

// listenLoopback listens on addr, which must be a loopback address: the
// reference cloud has no TLS and hands out tokens to whoever asks.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("listen %q: not a loopback address; cloudsim serves 127.0.0.1 or ::1 only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}
