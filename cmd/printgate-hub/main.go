// Command printgate-hub is printgate's cloud side: it holds the stores'
// agent connections and takes jobs from a chain's order system
// (docs/HUB.md).
//
//	printgate-hub run [--config FILE]
//	printgate-hub tenant add [--config FILE] --id ID [--name NAME]
//	printgate-hub store add [--config FILE] --tenant ID --id ID [--name NAME]
//	printgate-hub key add|list [--config FILE] --tenant ID
//	printgate-hub key revoke [--config FILE] --tenant ID --id KEY_ID
//	printgate-hub webhook add [--config FILE] --tenant ID --url URL
//	printgate-hub device add [--config FILE] --store ID
//	printgate-hub user add [--config FILE] --tenant ID --name NAME [--password-stdin]
//	printgate-hub user list|remove [--config FILE] --tenant ID [--name NAME]
//
// Without --config every command uses the built-in config (config.Default:
// 127.0.0.1:8640, the data in the user's state dir), for a first try.
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
	"strings"
	"syscall"
	"time"

	"printgate/hub"
	"printgate/hub/config"
	"printgate/hub/store"
	"printgate/hub/webhook"
)

func main() { os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage:
  printgate-hub run [--config FILE]                      run the hub
  printgate-hub tenant add [--config FILE] --id ID [--name NAME]
  printgate-hub store add [--config FILE] --tenant ID --id ID [--name NAME]
  printgate-hub key add [--config FILE] --tenant ID      prints a new API key once
  printgate-hub key list [--config FILE] --tenant ID     the tenant's keys: id, created, revoked
  printgate-hub key revoke [--config FILE] --tenant ID --id KEY_ID
  printgate-hub device add [--config FILE] --store ID    prints a device token for the store's agent once
  printgate-hub webhook add [--config FILE] --tenant ID --url URL   prints the endpoint's signing secret once
  printgate-hub user add [--config FILE] --tenant ID --name NAME [--password-stdin]
                                                         a fleet page user; without --password-stdin prints a new password once
  printgate-hub user list [--config FILE] --tenant ID
  printgate-hub user remove [--config FILE] --tenant ID --name NAME
Without --config: the built-in config (listen 127.0.0.1:8640, data in the
user's state dir; --listen ADDR and --data-dir DIR change them). The
commands other than run work on a stopped hub's data dir.
`

// dispatch runs one command and returns its exit code: 0 done, 1 failed,
// 2 a usage mistake.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "%sfix: name a command, e.g. printgate-hub run\n", usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	if cmd == "run" {
		return run(rest, stdout, stderr)
	}
	verb := ""
	if len(rest) > 0 {
		verb = rest[0]
	}
	switch {
	case verb == "add" && (cmd == "tenant" || cmd == "store" || cmd == "key" || cmd == "device" || cmd == "webhook"),
		cmd == "key" && (verb == "list" || verb == "revoke"):
		return admin(cmd, verb, rest[1:], stdout, stderr)
	case cmd == "user" && (verb == "add" || verb == "list" || verb == "remove"):
		return userCmd(verb, rest[1:], os.Stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "printgate-hub: unknown command %q\n%sfix: use one of the commands above\n", strings.TrimSpace(cmd+" "+verb), usage)
	return 2
}

// configFlags are the flags that choose the config: --config FILE, or the
// built-in one with --data-dir (and for run --listen) changing it.
type configFlags struct {
	path, dataDir, listen string
}

func (c *configFlags) register(fs *flag.FlagSet, withListen bool) {
	fs.StringVar(&c.path, "config", "", "the hub's TOML config (docs/HUB.md); without it, the built-in config")
	fs.StringVar(&c.dataDir, "data-dir", "", "the built-in config's data dir (not with --config)")
	if withListen {
		fs.StringVar(&c.listen, "listen", "", "the built-in config's listen address (not with --config)")
	}
}

// load returns the config the flags name; a usage mistake is exit code 2,
// a config that cannot be read 1, each said on stderr with its fix.
func (c *configFlags) load(cmdline string, stderr io.Writer) (*config.Config, int) {
	if c.path != "" {
		if c.dataDir != "" || c.listen != "" {
			fmt.Fprintf(stderr, "printgate-hub %s: --data-dir and --listen change only the built-in config, and --config names a file\nfix: set data_dir and listen in %s, or leave --config out\n", cmdline, c.path)
			return nil, 2
		}
		cfg, err := config.Load(c.path)
		if err != nil {
			fmt.Fprintf(stderr, "%v\nfix: correct the config and run printgate-hub %s --config %s again\n", err, cmdline, c.path)
			return nil, 1
		}
		return cfg, 0
	}
	cfg := config.Default()
	if c.dataDir != "" {
		cfg.DataDir = c.dataDir
	}
	if c.listen != "" {
		cfg.Listen = c.listen
	}
	if msg := config.CheckDefault(cfg); msg != "" {
		fmt.Fprintf(stderr, "printgate-hub %s: %s\nfix: correct --data-dir or --listen and run the command again\n", cmdline, msg)
		return nil, 2
	}
	return cfg, 0
}

// again is the flags a command needs to reach the same config: --config
// FILE, or --data-dir DIR when it is not the default one.
func (c *configFlags) again() string {
	switch {
	case c.path != "":
		return " --config " + shellQuote(c.path)
	case c.dataDir != "":
		return " --data-dir " + shellQuote(c.dataDir)
	}
	return ""
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs, true)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(stderr, "fix: printgate-hub run [--config FILE], or without --config: printgate-hub run [--listen ADDR] [--data-dir DIR]")
		return 2
	}
	cfg, code := cf.load("run", stderr)
	if cfg == nil {
		return code
	}
	if refuseForeign(cfg, "run", args, stderr) {
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := hub.Start(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "printgate-hub: %v\n%s", err, fixFor(err, &cf))
		return 1
	}
	log.Info("printgate-hub: listening", "addr", h.Addr().String(), "data_dir", cfg.DataDir, "config", cfg.Path)
	if cf.path == "" {
		nextSteps(stdout, cfg, &cf)
	}
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
		fmt.Fprintf(stderr, "printgate-hub: serve: %v\nfix: check that nothing else took %s and run printgate-hub run again\n", err, cfg.Listen)
		return 1
	}
}

// nextSteps tells whoever started the hub with the built-in config what
// it is and how to give it a tenant, a store and a key.
func nextSteps(w io.Writer, cfg *config.Config, cf *configFlags) {
	base := "http://" + cfg.Listen
	again := cf.again()
	fmt.Fprintf(w, `printgate-hub is running with the built-in config: %s, data in %s.
Next: stop it (Ctrl-C; the add commands work on a stopped hub) and give it a tenant, a store and a key:
  printgate-hub tenant add%[3]s --id acme --name "Acme Foods"
  printgate-hub store add%[3]s --tenant acme --id s001 --name "Store 1"
  printgate-hub key add%[3]s --tenant acme       # prints the order API's key once
  printgate-hub user add%[3]s --tenant acme --name ana   # prints a fleet page password once
  printgate-hub run%[3]s%[4]s
Then pair the store's agent: its [cloud] url = "ws://%[5]s/agent/v1", auth_url = "%[1]s/oauth",
run printgate pair there, open the QR's link (%[1]s/fleet/pair) signed in as ana and approve
its code for s001, or approve it with the key:
  curl -X POST -H "Authorization: Bearer $KEY" %[1]s/v1/stores/s001/pairings/CODE/approve
Submit jobs to %[1]s/v1/stores/s001/jobs and watch them on %[1]s/fleet/ (docs/HUB.md).
For production, write a config (docs/HUB.md) and run printgate-hub run --config FILE.
`, base, cfg.DataDir, again, listenAgain(cf), cfg.Listen)
}

// listenAgain is the --listen flag run was given, to repeat it.
func listenAgain(cf *configFlags) string {
	if cf.listen == "" {
		return ""
	}
	return " --listen " + shellQuote(cf.listen)
}

// fixFor is the fix line for a failure to start or open the data dir.
func fixFor(err error, cf *configFlags) string {
	switch {
	case errors.Is(err, store.ErrLocked):
		return "fix: another printgate-hub has this data dir open: stop it first (the add commands work on a stopped hub), or use another data_dir\n"
	case cf.path != "":
		return fmt.Sprintf("fix: check data_dir and listen in %s, and that the data dir is writable by this user\n", cf.path)
	}
	return "fix: check that the data dir is writable by this user and that nothing else listens on the address; --data-dir DIR and --listen ADDR choose others, --config FILE a config (docs/HUB.md)\n"
}

// admin runs the commands that change or read the directory of a stopped
// hub: tenant add, store add, key add|list|revoke, device add.
func admin(what, verb string, args []string, stdout, stderr io.Writer) int {
	cmdline := what + " " + verb
	fs := flag.NewFlagSet(cmdline, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs, false)
	id := fs.String("id", "", "the new id: a-z 0-9 _ - (key revoke: the key's id, as key add and key list show it)")
	name := fs.String("name", "", "a name for people")
	tenant := fs.String("tenant", "", "the tenant's id")
	storeID := fs.String("store", "", "the store's id")
	hookURL := fs.String("url", "", "the webhook endpoint: https://… (http:// only to a loopback host)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "fix: printgate-hub %s [--config FILE] with the flags above\n", cmdline)
		return 2
	}
	need := map[string][]string{"tenant add": {"id"}, "store add": {"tenant", "id"}, "key add": {"tenant"},
		"key list": {"tenant"}, "key revoke": {"tenant", "id"}, "device add": {"store"}, "webhook add": {"tenant", "url"}}[cmdline]
	vals := map[string]string{"id": *id, "tenant": *tenant, "store": *storeID, "url": *hookURL}
	for _, n := range need {
		if vals[n] == "" {
			fmt.Fprintf(stderr, "printgate-hub %s: --%s is required\nfix: printgate-hub %s --%s ...\n", cmdline, n, cmdline, strings.Join(need, " ... --"))
			return 2
		}
	}
	if cmdline == "webhook add" {
		if err := webhook.CheckURL(*hookURL); err != nil {
			fmt.Fprintf(stderr, "printgate-hub webhook add: %v\nfix: printgate-hub webhook add%s --tenant %s --url https://…\n", err, cf.again(), *tenant)
			return 2
		}
	}
	cfg, code := cf.load(cmdline, stderr)
	if cfg == nil {
		return code
	}
	if refuseForeign(cfg, cmdline, args, stderr) {
		return 1
	}
	ctx := context.Background()
	st, err := hub.OpenStore(ctx, cfg, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintf(stderr, "printgate-hub: %v\n%s", err, fixFor(err, &cf))
		return 1
	}
	defer st.Close()
	switch cmdline {
	case "tenant add":
		_, err = st.AddTenant(ctx, *id, *name)
		if err == nil {
			fmt.Fprintf(stdout, "tenant %s added\n", *id)
		}
	case "store add":
		_, err = st.AddStore(ctx, *tenant, *id, *name)
		if err == nil {
			fmt.Fprintf(stdout, "store %s added to tenant %s\n", *id, *tenant)
		}
	case "key add":
		var k store.APIKey
		var secret string
		k, secret, err = st.AddAPIKey(ctx, *tenant)
		if err == nil {
			fmt.Fprintf(stdout, "%s\n", secret)
			fmt.Fprintf(stderr, "API key %s of tenant %s: shown once above, the hub keeps only its hash; printgate-hub key revoke%s --tenant %s --id %s revokes it\n", k.ID, *tenant, cf.again(), *tenant, k.ID)
		}
	case "key list":
		err = listKeys(ctx, st, *tenant, stdout)
	case "key revoke":
		var k store.APIKey
		if k, err = st.RevokeAPIKey(ctx, *tenant, *id); err == nil {
			fmt.Fprintf(stdout, "API key %s of tenant %s revoked: the order API answers it 401 from the hub's next start\n", k.ID, *tenant)
		}
	case "device add":
		var d store.Device
		var secret string
		d, secret, err = st.AddDevice(ctx, *storeID, "")
		if err == nil {
			fmt.Fprintf(stdout, "%s\n", secret)
			fmt.Fprintf(stderr, "device token %s of store %s: shown once above; write it to the agent's {data_dir}/device-token\n", d.ID, *storeID)
		}
	case "webhook add":
		err = addWebhook(ctx, st, *tenant, *hookURL, stdout, stderr)
	}
	if err != nil {
		fix := "fix: check the ids (printgate-hub tenant add / store add make them) and run the command again"
		switch {
		case errors.Is(err, store.ErrExists):
			fix = "fix: that id is taken; choose another"
		case cmdline == "key revoke" && errors.Is(err, store.ErrNotFound):
			fix = fmt.Sprintf("fix: printgate-hub key list%s --tenant %s shows the tenant's key ids", cf.again(), *tenant)
		}
		if errors.Is(err, store.ErrFull) && cmdline == "webhook add" {
			fix = "fix: the tenant has the most endpoints it may have; delete one with DELETE /v1/webhooks/{id}"
		}
		fmt.Fprintf(stderr, "printgate-hub %s: %v\n%s\n", cmdline, err, fix)
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

// refuseForeign refuses, with its fix, to open as root a data dir that
// belongs to another user (foreignOwner), and says whether it did.
func refuseForeign(cfg *config.Config, cmdline string, args []string, stderr io.Writer) bool {
	owner, foreign := foreignOwner(cfg.DataDir)
	if !foreign {
		return false
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	fmt.Fprintf(stderr, "printgate-hub %s: the data dir %s belongs to %s; run as root, this command would leave files there the hub (run as %s) cannot open\nfix: run it as %s: runuser -u %s -- printgate-hub %s %s\n",
		cmdline, cfg.DataDir, owner, owner, owner, owner, cmdline, strings.Join(quoted, " "))
	return true
}

// listKeys prints a tenant's API keys, one a line: id, created, state.
func listKeys(ctx context.Context, st *store.Store, tenant string, w io.Writer) error {
	if _, err := st.Tenant(ctx, tenant); err != nil {
		return fmt.Errorf("tenant %s: %w", tenant, err)
	}
	keys, err := st.APIKeys(ctx, tenant)
	if err != nil {
		return err
	}
	for _, k := range keys {
		state := "active"
		if k.Revoked {
			state = "revoked"
		}
		fmt.Fprintf(w, "%s  %s  %s\n", k.ID, k.Created.Format("2006-01-02T15:04:05Z"), state)
	}
	if len(keys) == 0 {
		fmt.Fprintf(w, "tenant %s has no API keys; printgate-hub key add makes one\n", tenant)
	}
	return nil
}
