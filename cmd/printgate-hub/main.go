// Command printgate-hub is printgate's cloud side: it holds the stores'
// agent connections and takes jobs from a chain's order system
// (docs/HUB.md).
//
//	printgate-hub run --config FILE
//	printgate-hub tenant add --config FILE --id ID [--name NAME]
//	printgate-hub store add --config FILE --tenant ID --id ID [--name NAME]
//	printgate-hub key add --config FILE --tenant ID
//	printgate-hub webhook add --config FILE --tenant ID --url URL
//	printgate-hub device add --config FILE --store ID
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"printgate/hub"
	"printgate/hub/config"
	"printgate/hub/store"
	"printgate/hub/webhook"
)

// defaultConfig is where run and the other commands look without --config.
const defaultConfig = "/etc/printgate-hub/hub.toml"

func main() { os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage:
  printgate-hub run --config FILE                        run the hub
  printgate-hub tenant add --config FILE --id ID [--name NAME]
  printgate-hub store add --config FILE --tenant ID --id ID [--name NAME]
  printgate-hub key add --config FILE --tenant ID        prints a new API key once
  printgate-hub device add --config FILE --store ID      prints a device token for the store's agent once
  printgate-hub webhook add --config FILE --tenant ID --url URL   prints the endpoint's signing secret once
The commands other than run work on a stopped hub's data dir.
`

// dispatch runs one command and returns its exit code: 0 done, 1 failed,
// 2 a usage mistake.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	if cmd == "run" {
		return run(rest, stderr)
	}
	if len(rest) == 0 || rest[0] != "add" {
		fmt.Fprintf(stderr, "printgate-hub: unknown command %q\n%s", cmd, usage)
		return 2
	}
	switch cmd {
	case "tenant", "store", "key", "device", "webhook":
		return add(cmd, rest[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "printgate-hub: unknown command %q\n%s", cmd, usage)
	return 2
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", defaultConfig, "the hub's TOML config")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\nfix: correct the config and run printgate-hub run --config %s again\n", err, *path)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := hub.Start(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "printgate-hub: %v\n%s", err, fixFor(err, *path))
		return 1
	}
	log.Info("printgate-hub: listening", "addr", h.Addr().String(), "data_dir", cfg.DataDir)
	served := make(chan error, 1)
	go func() { served <- h.Serve() }()
	select {
	case <-ctx.Done():
		log.Info("printgate-hub: stopping")
		h.Close()
		<-served
		return 0
	case err := <-served:
		h.Close()
		fmt.Fprintf(stderr, "printgate-hub: serve: %v\nfix: check that nothing else took %s and run printgate-hub again\n", err, cfg.Listen)
		return 1
	}
}

// fixFor is the fix line for a failure to start or open the data dir.
func fixFor(err error, path string) string {
	if errors.Is(err, store.ErrLocked) {
		return "fix: another printgate-hub has this data dir open: stop it first (the add commands work on a stopped hub), or use another data_dir\n"
	}
	return fmt.Sprintf("fix: check data_dir and listen in %s, and that the data dir is writable by this user\n", path)
}

func add(what string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(what+" add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", defaultConfig, "the hub's TOML config")
	id := fs.String("id", "", "the new id: a-z 0-9 _ -")
	name := fs.String("name", "", "a name for people")
	tenant := fs.String("tenant", "", "the tenant's id")
	storeID := fs.String("store", "", "the store's id")
	hookURL := fs.String("url", "", "the webhook endpoint: https://… (http:// only to a loopback host)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	need := map[string][]string{"tenant": {"id"}, "store": {"tenant", "id"}, "key": {"tenant"}, "device": {"store"}, "webhook": {"tenant", "url"}}[what]
	vals := map[string]string{"id": *id, "tenant": *tenant, "store": *storeID, "url": *hookURL}
	for _, n := range need {
		if vals[n] == "" {
			fmt.Fprintf(stderr, "printgate-hub %s add: --%s is required\nfix: printgate-hub %s add --config FILE --%s ...\n", what, n, what, n)
			return 2
		}
	}
	if what == "webhook" {
		if err := webhook.CheckURL(*hookURL); err != nil {
			fmt.Fprintf(stderr, "printgate-hub webhook add: %v\nfix: printgate-hub webhook add --config FILE --tenant %s --url https://…\n", err, *tenant)
			return 2
		}
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\nfix: correct the config and run the command again\n", err)
		return 1
	}
	ctx := context.Background()
	st, err := hub.OpenStore(ctx, cfg, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintf(stderr, "printgate-hub: %v\n%s", err, fixFor(err, *path))
		return 1
	}
	defer st.Close()
	switch what {
	case "tenant":
		_, err = st.AddTenant(ctx, *id, *name)
		if err == nil {
			fmt.Fprintf(stdout, "tenant %s added\n", *id)
		}
	case "store":
		_, err = st.AddStore(ctx, *tenant, *id, *name)
		if err == nil {
			fmt.Fprintf(stdout, "store %s added to tenant %s\n", *id, *tenant)
		}
	case "key":
		var k store.APIKey
		var secret string
		k, secret, err = st.AddAPIKey(ctx, *tenant)
		if err == nil {
			fmt.Fprintf(stdout, "%s\n", secret)
			fmt.Fprintf(stderr, "API key %s of tenant %s: shown once above, the hub keeps only its hash\n", k.ID, *tenant)
		}
	case "device":
		var d store.Device
		var secret string
		d, secret, err = st.AddDevice(ctx, *storeID, "")
		if err == nil {
			fmt.Fprintf(stdout, "%s\n", secret)
			fmt.Fprintf(stderr, "device token %s of store %s: shown once above; write it to the agent's {data_dir}/device-token\n", d.ID, *storeID)
		}
	case "webhook":
		err = addWebhook(ctx, st, *tenant, *hookURL, stdout, stderr)
	}
	if err != nil {
		fix := "fix: check the ids (printgate-hub tenant add / store add make them) and run the command again"
		if errors.Is(err, store.ErrExists) {
			fix = "fix: that id is taken; choose another"
		}
		if errors.Is(err, store.ErrFull) && what == "webhook" {
			fix = "fix: the tenant has the most endpoints it may have; delete one with DELETE /v1/webhooks/{id}"
		}
		fmt.Fprintf(stderr, "printgate-hub %s add: %v\n%s\n", what, err, fix)
		return 1
	}
	return 0
}

// addWebhook adds a tenant's endpoint and prints its signing secret once
// (the receiver verifies with it), its id on stderr.
func addWebhook(ctx context.Context, st *store.Store, tenant, url string, stdout, stderr io.Writer) error {
	id, err := webhook.NewID()
	if err != nil {
		return err
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return err
	}
	if err := st.AddWebhook(ctx, store.Webhook{ID: id, Tenant: tenant, URL: url, Secret: secret, Created: time.Now().UTC()}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", secret)
	fmt.Fprintf(stderr, "webhook %s of tenant %s to %s: its signing secret is shown once above; give it to the receiver\n", id, tenant, url)
	return nil
}
