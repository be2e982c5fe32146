package web

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The shared PIN budget stops a guesser who changes address, and its
// pause shut the manager out too: a program on the PC, or a guest on the
// LAN, that kept spending the budget kept sign-in paused for good. A
// browser that once signed in with the right PIN is given a device cookie;
// with it the manager's PIN checks skip the per-client lockout and the
// shared pause, which an attacker on the network, never having known the
// PIN, has no way to skip. A device has its own small budget instead: its
// DeviceFailureLimit-th wrong PIN in a row forgets it, so a stolen cookie
// is worth a handful of guesses.

// Device cookie limits.
const (
	// DevicesFile is the file in the data dir that holds the SHA-256 of
	// each device cookie, with when it last signed in (mode 0600).
	DevicesFile = "devices"
	// DeviceFailureLimit wrong PINs in a row from a device forget it.
	DeviceFailureLimit = 5
	// maxDevices bounds the devices remembered; past it the one that
	// signed in longest ago is forgotten.
	maxDevices = 32
	// deviceLife is how long after its last sign-in a device is
	// remembered, and the cookie's Max-Age.
	deviceLife = 180 * 24 * time.Hour
	// deviceCookie is the cookie's name.
	deviceCookie = "printgate_device"
)

// deviceStore remembers the browsers that signed in, by the hash of their
// cookie, in DevicesFile. Safe for concurrent use.
type deviceStore struct {
	dir string
	now func() time.Time

	mu     sync.Mutex
	loaded bool
	seen   map[[sha256.Size]byte]time.Time // last sign-in, by cookie hash
	fails  map[[sha256.Size]byte]int       // wrong PINs in a row (memory only)
}

func newDeviceStore(dir string, now func() time.Time) *deviceStore {
	return &deviceStore{dir: dir, now: now, seen: map[[sha256.Size]byte]time.Time{}, fails: map[[sha256.Size]byte]int{}}
}

// device is r's device cookie's hash, and whether it names a remembered
// device.
func (d *deviceStore) device(r *http.Request) ([sha256.Size]byte, bool) {
	c, err := r.Cookie(deviceCookie)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return [sha256.Size]byte{}, false
	}
	key := sha256.Sum256([]byte(c.Value))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.loadLocked()
	at, ok := d.seen[key]
	if !ok || !d.now().Before(at.Add(deviceLife)) {
		return key, false
	}
	return key, true
}

// known reports whether r carries the cookie of a remembered device.
func (d *deviceStore) known(r *http.Request) bool {
	_, ok := d.device(r)
	return ok
}

// fail counts a wrong PIN from device key and reports whether that
// forgot it.
func (d *deviceStore) fail(key [sha256.Size]byte) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fails[key]++
	if d.fails[key] < DeviceFailureLimit {
		return false, nil
	}
	delete(d.fails, key)
	delete(d.seen, key)
	return true, d.saveLocked()
}

// succeed records a right PIN from device key: its count starts again.
func (d *deviceStore) succeed(key [sha256.Size]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.fails, key)
}

// remember records a sign-in from r's browser: a remembered device is
// refreshed, any other is given a new cookie (set on w).
func (d *deviceStore) remember(w http.ResponseWriter, r *http.Request, secure bool) error {
	key, ok := d.device(r)
	value := ""
	if !ok {
		value = randomToken()
		key = sha256.Sum256([]byte(value))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.loadLocked()
	now := d.now()
	d.seen[key] = now
	delete(d.fails, key)
	for len(d.seen) > maxDevices {
		var oldest [sha256.Size]byte
		first := true
		for k, at := range d.seen {
			if first || at.Before(d.seen[oldest]) {
				oldest, first = k, false
			}
		}
		delete(d.seen, oldest)
	}
	if value != "" {
		http.SetCookie(w, &http.Cookie{
			Name: deviceCookie, Value: value, Path: "/", MaxAge: int(deviceLife / time.Second),
			HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode,
		})
	}
	return d.saveLocked()
}

// loadLocked reads DevicesFile once; a missing or unreadable file is no
// devices (the manager then signs in as any browser does). d.mu is held.
func (d *deviceStore) loadLocked() {
	if d.loaded {
		return
	}
	d.loaded = true
	b, err := os.ReadFile(filepath.Join(d.dir, DevicesFile))
	if err != nil {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		h, err := hex.DecodeString(f[0])
		sec, err2 := strconv.ParseInt(f[1], 10, 64)
		if err != nil || err2 != nil || len(h) != sha256.Size {
			continue
		}
		d.seen[[sha256.Size]byte(h)] = time.Unix(sec, 0)
	}
}

// saveLocked writes the devices still within deviceLife to DevicesFile.
// d.mu is held.
func (d *deviceStore) saveLocked() error {
	now := d.now()
	var lines []string
	for k, at := range d.seen {
		if !now.Before(at.Add(deviceLife)) {
			delete(d.seen, k)
			continue
		}
		lines = append(lines, fmt.Sprintf("%x %d", k, at.Unix()))
	}
	sort.Strings(lines)
	content := strings.Join(lines, "\n")
	if content != "" {
		content += "\n"
	}
	if err := writeSecretFile(d.dir, DevicesFile, content); err != nil {
		return fmt.Errorf("remember the signed-in browsers: %w", err)
	}
	return nil
}
