package web

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"printgate/agent/lockout"
	"printgate/agent/logring"
	"printgate/internal/fileowner"
)

// A browser on the store PC was once trusted to set the first PIN, and any
// page it had open could do that too (a DNS-rebinding page set the PIN
// and took the page over). Setup now also asks for a one-time code that
// only someone who sees the agent's terminal, log or `printgate status` can
// know, as Jupyter asks for its token.

// SetupCodeFile is the file in the data dir that holds the first-run setup
// code while no PIN is set (mode 0600).
const SetupCodeFile = "setup-code"

// SetupCodeSpendLimit is how many wrong setup codes, from any address, the
// page takes before the code stops working and a new one replaces it: with
// a code of 10^8 values a guesser has no chance with any one code, and the
// per-address lockout and the shared PIN budget bound how many codes it
// can spend. `printgate pin set` needs none.
const SetupCodeSpendLimit = 10

// ErrNoSetupCode means no setup code is waiting: a PIN is set, or the agent
// has not made one (it makes one at start while no PIN is set).
var ErrNoSetupCode = errors.New("no first-run setup code is waiting")

// SetupCodePath is where the setup code lives in dataDir.
func SetupCodePath(dataDir string) string { return filepath.Join(dataDir, SetupCodeFile) }

// PrepareSetup readies first-run setup when the agent starts: while no PIN
// is set it writes a new random setup code ("1234-5678") to dataDir and
// returns it, for the agent to show its manager; once a PIN is set it
// removes any code left over and returns "".
func PrepareSetup(dataDir string) (string, error) {
	if _, err := LoadPIN(dataDir); !errors.Is(err, ErrNoPIN) {
		return "", RemoveSetupCode(dataDir)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(100_000_000))
	if err != nil {
		return "", fmt.Errorf("make a setup code: %w", err)
	}
	v := n.Int64()
	code := fmt.Sprintf("%04d-%04d", v/10_000, v%10_000)
	if err := writeSecretFile(dataDir, SetupCodeFile, code+"\n"); err != nil {
		return "", err
	}
	return code, nil
}

// LoadSetupCode returns the waiting setup code, or an error wrapping
// ErrNoSetupCode when there is none.
func LoadSetupCode(dataDir string) (string, error) {
	b, err := os.ReadFile(SetupCodePath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return "", ErrNoSetupCode
	}
	if err != nil {
		return "", fmt.Errorf("read the setup code %s: %w", SetupCodePath(dataDir), err)
	}
	code := string(bytes.TrimSpace(b))
	if code == "" {
		return "", ErrNoSetupCode
	}
	return code, nil
}

// RemoveSetupCode deletes the setup code; none there is not an error.
func RemoveSetupCode(dataDir string) error {
	if err := os.Remove(SetupCodePath(dataDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the setup code %s: %w", SetupCodePath(dataDir), err)
	}
	return nil
}

// writeSecretFile writes content to name in dir, readable by its owner
// only: aside, synced and renamed into place.
func writeSecretFile(dir, name, content string) error {
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, name+".*.tmp") // CreateTemp makes it 0600
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// An agent run by root (sudo printgate run) leaves the file readable
	// by the service that owns the data dir.
	if err := fileowner.Like(tmp.Name(), dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	return nil
}

// normalizeSetupCode is a typed code as it is compared: digits only, so
// "1234 5678" and "12345678" are the code "1234-5678".
func normalizeSetupCode(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		if r == '-' || r == ' ' || r == '\t' {
			return -1
		}
		return 'x' // never matches a code
	}, s)
}

// codeResult is the outcome of a setup code check.
type codeResult int

const (
	codeOK      codeResult = iota
	codeWrong              // counted against the client, like a wrong PIN
	codeLocked             // the client is locked out; the code was not checked
	codeMissing            // no code is waiting (spent, or none was made)
	codeError              // the code file could not be read
)

// checkSetupCode checks the code typed into the setup form for r's client.
// A wrong one counts against its address exactly as a wrong PIN does, and
// SetupCodeSpendLimit wrong ones in all remove the code. The caller holds
// pinMu.
func (p *Page) checkSetupCode(r *http.Request, typed string) (codeResult, time.Duration) {
	// Counted as a PIN is: per address (IPv6 by /64) and against the
	// shared budget, so many addresses guess codes no faster than PINs.
	addr := pinClient(r)
	if left := p.pinLockedFor(addr); left > 0 {
		return codeLocked, left
	}
	code, err := LoadSetupCode(p.opts.DataDir)
	if errors.Is(err, ErrNoSetupCode) {
		return codeMissing, 0
	}
	if err != nil {
		p.log.LogAttrs(r.Context(), slog.LevelError, "manager page: cannot read the setup code", slog.Any("err", err))
		return codeError, 0
	}
	want, got := normalizeSetupCode(code), normalizeSetupCode(typed)
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 {
		p.lockout.Succeed(addr)
		return codeOK, 0
	}
	p.wrongCodes++
	if p.wrongCodes >= SetupCodeSpendLimit {
		p.replaceSetupCode(r, addr)
	}
	if left := p.pinFailed(r, addr); left > 0 {
		return codeLocked, left
	}
	p.log.LogAttrs(r.Context(), slog.LevelInfo, "manager page: wrong setup code", slog.String("client", lockout.ClientAddr(r).String()))
	return codeWrong, 0
}

// replaceSetupCode spends the setup code after SetupCodeSpendLimit wrong
// ones and issues a new one at once: any program on the PC can type ten
// wrong codes, and a code that then stayed dead until a restart locked the
// manager out of first-run setup. The wrong guesses are still bounded per
// address and by the shared budget, so a new code gives a guesser nothing
// it lacked. The new code goes where the first one went: the console and
// log file (never the ring, which API-token holders and the cloud read)
// and printgate status, which reads its file. The caller holds pinMu.
func (p *Page) replaceSetupCode(r *http.Request, addr netip.Addr) {
	wrong := p.wrongCodes
	p.wrongCodes = 0
	code, err := PrepareSetup(p.opts.DataDir)
	if err != nil || code == "" {
		if rmErr := RemoveSetupCode(p.opts.DataDir); rmErr != nil {
			p.log.LogAttrs(r.Context(), slog.LevelError, "manager page: cannot remove the setup code", slog.Any("err", rmErr))
		}
		p.log.LogAttrs(r.Context(), slog.LevelError, "manager page: the first-run setup code was typed wrong too often and no new one could be made; restart printgate for a new one, or set the PIN with printgate pin set",
			slog.Int("wrong_codes", wrong), slog.String("client", addr.String()), slog.Any("err", err))
		return
	}
	p.log.LogAttrs(r.Context(), slog.LevelWarn, "manager page: the first-run setup code was typed wrong too often; it no longer works and a new one replaces it (printgate status shows it). If it was not you, check what runs on this PC",
		slog.Int("wrong_codes", wrong), slog.String("client", addr.String()))
	p.log.LogAttrs(logring.LocalOnly(r.Context()), slog.LevelWarn, "first-run setup code: "+code+" (a new one: the last was typed wrong too often; open /setup on this PC and type it; it is also in printgate status)")
}
