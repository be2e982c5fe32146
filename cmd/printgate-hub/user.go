package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"printgate/hub"
	"printgate/hub/store"
)

// userCmd runs user add, user list and user remove on a stopped hub's data
// dir: the people who sign in to the fleet page (docs/HUB.md).
func userCmd(verb string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmdline := "user " + verb
	fs := flag.NewFlagSet(cmdline, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs, false)
	tenant := fs.String("tenant", "", "the tenant's id")
	name := fs.String("name", "", "the user's name: "+store.IDChars)
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of stdin instead of making one")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "fix: printgate-hub %s [--config FILE] with the flags above\n", cmdline)
		return 2
	}
	need := []string{"tenant"}
	if verb != "list" {
		need = append(need, "name")
	}
	vals := map[string]string{"tenant": *tenant, "name": *name}
	for _, n := range need {
		if vals[n] == "" {
			fmt.Fprintf(stderr, "printgate-hub %s: --%s is required\nfix: printgate-hub %s --%s ...\n", cmdline, n, cmdline, strings.Join(need, " ... --"))
			return 2
		}
	}
	var password string
	if verb == "add" {
		if err := store.ValidID(*name); err != nil {
			fmt.Fprintf(stderr, "printgate-hub user add: user name %v\nfix: choose a name of %s, e.g. --name ana\n", err, store.IDChars)
			return 2
		}
		if *fromStdin {
			line, err := bufio.NewReader(io.LimitReader(stdin, 4*store.MaxPasswordLen+2)).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				fmt.Fprintf(stderr, "printgate-hub user add: read the password from stdin: %v\nfix: echo 'the password' | printgate-hub user add ... --password-stdin\n", err)
				return 1
			}
			password = strings.TrimRight(line, "\r\n")
			if err := store.CheckPassword(password); err != nil {
				fmt.Fprintf(stderr, "printgate-hub user add: %v\nfix: give a password of %d to %d characters on stdin, or leave --password-stdin out and the hub makes one\n", err, store.MinPasswordLen, store.MaxPasswordLen)
				return 2
			}
		} else {
			password = newPassword()
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
	switch verb {
	case "add":
		if _, err = st.AddUser(ctx, *tenant, *name, password); err == nil {
			if !*fromStdin {
				fmt.Fprintf(stdout, "%s\n", password)
			}
			shown := "its password is the one given on stdin"
			if !*fromStdin {
				shown = "its password is shown once above, the hub keeps only its hash"
			}
			fmt.Fprintf(stderr, "user %s of tenant %s added: %s; they sign in at the fleet page, https://<hub>/fleet/\n", *name, *tenant, shown)
		}
	case "list":
		err = listUsers(ctx, st, *tenant, stdout)
	case "remove":
		if err = st.RemoveUser(ctx, *tenant, *name); err == nil {
			fmt.Fprintf(stdout, "user %s of tenant %s removed: they cannot sign in from the hub's next start\n", *name, *tenant)
		}
	}
	if err != nil {
		fix := "fix: check the tenant's id (printgate-hub tenant add makes one) and run the command again"
		switch {
		case errors.Is(err, store.ErrExists):
			fix = fmt.Sprintf("fix: tenant %s has a user %s; choose another name, or remove it first with printgate-hub user remove%s --tenant %s --name %s", *tenant, *name, cf.again(), *tenant, *name)
		case verb == "remove" && errors.Is(err, store.ErrNotFound):
			fix = fmt.Sprintf("fix: printgate-hub user list%s --tenant %s shows the tenant's users", cf.again(), *tenant)
		}
		fmt.Fprintf(stderr, "printgate-hub %s: %v\n%s\n", cmdline, err, fix)
		return 1
	}
	return 0
}

// listUsers prints a tenant's users, one a line: name, created.
func listUsers(ctx context.Context, st *store.Store, tenant string, w io.Writer) error {
	if _, err := st.Tenant(ctx, tenant); err != nil {
		return fmt.Errorf("tenant %s: %w", tenant, err)
	}
	users, err := st.Users(ctx, tenant)
	if err != nil {
		return err
	}
	for _, u := range users {
		fmt.Fprintf(w, "%s  %s\n", u.Name, u.Created.Format("2006-01-02T15:04:05Z"))
	}
	if len(users) == 0 {
		fmt.Fprintf(w, "tenant %s has no users; printgate-hub user add makes one\n", tenant)
	}
	return nil
}

// passwordChars are the characters of a made password: no 0/O, 1/l/I, so
// it can be read aloud and typed on a phone.
const passwordChars = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// newPassword makes a password of 20 characters (about 115 bits).
func newPassword() string {
	return randomFrom(passwordChars, 20)
}

func randomFrom(chars string, n int) string {
	b := make([]byte, n)
	max := byte(256 - 256%len(chars))
	buf := make([]byte, 1)
	for i := 0; i < n; {
		_, _ = rand.Read(buf)
		if buf[0] >= max {
			continue
		}
		b[i] = chars[int(buf[0])%len(chars)]
		i++
	}
	return string(b)
}
