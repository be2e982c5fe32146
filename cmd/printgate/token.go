package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"printgate/agent/config"
	"printgate/internal/fileowner"
)

func init() {
	register("token", command{summary: "print a new random API token for the config", run: runToken})
}

func runToken(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the token to `FILE`, readable by its owner only (0600), instead of printing it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate token [--out FILE]\n\nPrints a new random API token (32 characters). Save it where the config\nnames it, e.g. printgate token --out /etc/printgate/api-token.txt with\napi_token_file = \"api-token.txt\", and give the same token to the POS.\n--out writes the file readable by its owner only; a file made with > is\nreadable by every user of the machine.")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	tok := config.NewToken()
	if *out == "" {
		fmt.Fprintln(stdout, tok)
		return 0
	}
	if err := writeSecretFile(*out, tok+"\n"); err != nil {
		fmt.Fprintf(stderr, "printgate token: %v\nfix: choose a folder you can write to (sudo for /etc/printgate), or print the token without --out\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote a new API token to %s (readable by its owner only); name it in the config with api_token_file\n", *out)
	return 0
}

// writeSecretFile writes s to path readable by its owner only, also when
// path already exists with a wider mode: the file is written under a
// temporary name at 0600 and renamed over path, so no moment exists in
// which the new secret sits in a readable file.
func writeSecretFile(path, s string) error {
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	// A token replaced with sudo stays readable by the account that read
	// the old one (the service's); a new one takes its folder's owner.
	ref := path
	if _, err := os.Stat(path); err != nil {
		ref = filepath.Dir(path)
	}
	if err := fileowner.Like(tmp, ref); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
