package pair

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"printgate/internal/fileowner"
)

// TokenFile is the name of the device token's file in the data dir.
const TokenFile = "device-token"

// MaxTokenLen bounds a device token; the cloud's tokens are far shorter.
const MaxTokenLen = 4096

// TokenPath is where the device token of the agent with dataDir is kept.
func TokenPath(dataDir string) string { return filepath.Join(dataDir, TokenFile) }

// checkToken accepts what can travel in an Authorization header and sit on
// one line of a file: 1 to MaxTokenLen visible ASCII characters.
func checkToken(token string) error {
	if token == "" {
		return errors.New("is empty")
	}
	if len(token) > MaxTokenLen {
		return fmt.Errorf("is %d bytes, more than %d", len(token), MaxTokenLen)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("has a character that is not visible ASCII at byte %d", i)
		}
	}
	return nil
}

// Save stores token as the agent's device token in dataDir (created, mode
// 0700, if missing), replacing any earlier one. The file is written whole
// or not at all: a synced temporary file renamed into place, then the
// folder synced, so a crash never leaves half a token.
//
// The file gets mode 0600 and, saved by root, the data dir's owner (the
// service's account), so `sudo printgate pair` leaves a token the
// service can read. That is all Go can set
// portably. On Windows the mode only clears the read-only flag; the file
// inherits the ACL of the data dir (%ProgramData%\printgate), which the
// installer must restrict to SYSTEM and Administrators, since ProgramData
// lets every user read by default.
func Save(dataDir, token string) (err error) {
	if err := checkToken(token); err != nil {
		return fmt.Errorf("save the device token: it %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("save the device token: %w", err)
	}
	path := TokenPath(dataDir)
	f, err := os.CreateTemp(dataDir, "."+TokenFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("save the device token: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// CreateTemp makes the file 0600 already; say so, in case that changes.
	if err := f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("save the device token: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		return fmt.Errorf("save the device token: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("save the device token: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save the device token: %w", err)
	}
	// `sudo printgate pair` runs as root; the service reads the token as
	// the data dir's owner.
	if err := fileowner.Like(f.Name(), dataDir); err != nil {
		return fmt.Errorf("save the device token: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("save the device token: %w", err)
	}
	syncDir(dataDir)
	return nil
}

// Load returns the device token stored in dataDir. An agent that is not
// paired gets an error that satisfies errors.Is(err, os.ErrNotExist). It is
// one read of a small file, cheap enough to call before every connect.
func Load(dataDir string) (string, error) {
	b, err := os.ReadFile(TokenPath(dataDir))
	if err != nil {
		return "", fmt.Errorf("load the device token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if err := checkToken(token); err != nil {
		return "", fmt.Errorf("load the device token: %s %w: run printgate pair again", TokenPath(dataDir), err)
	}
	return token, nil
}

// Remove forgets the device token in dataDir, so the agent is unpaired.
// Removing a token that is not there is not an error.
func Remove(dataDir string) error {
	if err := os.Remove(TokenPath(dataDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the device token: %w", err)
	}
	syncDir(dataDir)
	return nil
}

// syncDir makes a rename or removal in dir durable; where directories
// cannot be synced (Windows) it does nothing.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
