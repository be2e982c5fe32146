package web

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/argon2"

	"printgate/internal/fileowner"
)

// PINFile is the file in the data dir that holds the manager PIN's hash.
const PINFile = "manager-pin"

// MinPINLength and MaxPINLength bound a manager PIN: short enough to type
// on a phone at the pass, long enough that five guesses a minute take
// weeks.
const (
	MinPINLength = 6
	MaxPINLength = 64
)

// ErrNoPIN means no manager PIN has been set yet.
var ErrNoPIN = errors.New("no manager PIN is set")

// argon2id parameters: OWASP's minimum for argon2id (19 MiB, 2 passes),
// cheap enough for a store PC to check a login in tens of milliseconds.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// CheckPINFormat says what is wrong with pin as a new manager PIN, or nil.
func CheckPINFormat(pin string) error {
	n := len([]rune(pin))
	switch {
	case n < MinPINLength:
		return fmt.Errorf("the PIN must have at least %d characters", MinPINLength)
	case n > MaxPINLength:
		return fmt.Errorf("the PIN must have at most %d characters", MaxPINLength)
	case strings.TrimSpace(pin) != pin:
		return errors.New("the PIN must not start or end with a space")
	}
	return nil
}

// HashPIN returns the PHC-style argon2id hash of pin with a fresh salt.
func HashPIN(pin string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("salt for the PIN hash: %w", err)
	}
	key := argon2.IDKey([]byte(pin), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemory, argonTime, argonThreads, enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// VerifyPIN reports whether pin matches hash (made by HashPIN), in time
// that does not depend on where they differ.
func VerifyPIN(hash, pin string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	var mem, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &t, &p); err != nil || mem == 0 || t == 0 || p == 0 || mem > 1<<20 || t > 16 {
		return false
	}
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := enc.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(pin), salt, t, mem, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// PINPath is where the manager PIN's hash lives in dataDir.
func PINPath(dataDir string) string { return filepath.Join(dataDir, PINFile) }

// SetPIN checks pin and stores its hash in dataDir, replacing any PIN set
// before, and deletes the first-run setup code. The file is written aside,
// synced and renamed into place, so a crash leaves the old PIN or the new
// one, never neither.
func SetPIN(dataDir, pin string) error {
	if err := CheckPINFormat(pin); err != nil {
		return err
	}
	hash, err := HashPIN(pin)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	path := PINPath(dataDir)
	tmp, err := os.CreateTemp(dataDir, PINFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("write manager PIN %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hash + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("write manager PIN %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync manager PIN %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write manager PIN %s: %w", path, err)
	}
	// `sudo printgate pin set` runs as root; the service reads the file
	// as the data dir's owner.
	if err := fileowner.Like(tmp.Name(), dataDir); err != nil {
		return fmt.Errorf("write manager PIN %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("install manager PIN %s: %w", path, err)
	}
	// The first-run setup code has done its job. Should it stay (a
	// read-only file), it opens nothing: setup is closed once a PIN is
	// set, and the next start removes it.
	_ = RemoveSetupCode(dataDir)
	return nil
}

// LoadPIN returns the stored PIN hash, or an error wrapping ErrNoPIN when
// none is set.
func LoadPIN(dataDir string) (string, error) {
	b, err := os.ReadFile(PINPath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w (set one from this PC's browser or with printgate pin set)", ErrNoPIN)
	}
	if err != nil {
		return "", &PINFileError{Path: PINPath(dataDir), Err: err}
	}
	return string(bytes.TrimSpace(b)), nil
}

// PINFileError is a manager PIN file the agent cannot read. Its message is
// the whole story for the login page and the log: what failed and the
// command that fixes it ("… permission denied. fix: sudo chown …").
type PINFileError struct {
	Path string
	Err  error
}

// Error says which file could not be read, why, and the fix.
func (e *PINFileError) Error() string {
	why := e.Err
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		why = pe.Err
	}
	return fmt.Sprintf("cannot read the manager PIN file %s: %v. fix: %s", e.Path, why, e.Fix())
}

// Fix is what to do: give the file to the account the agent runs as when
// it belongs to another (`sudo printgate pin set` once made it root's),
// else look at the disk.
func (e *PINFileError) Fix() string {
	if errors.Is(e.Err, fs.ErrPermission) {
		return fileowner.ChownFix(e.Path, fileowner.Current()) + " (the account the agent runs as), or set the PIN again with sudo printgate pin set"
	}
	return "check the disk holding " + filepath.Dir(e.Path) + ", then set the PIN again with sudo printgate pin set"
}

// Unwrap is the read's own error, for errors.Is.
func (e *PINFileError) Unwrap() error { return e.Err }
