package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/argon2"
)

// User is a person of a tenant who signs in to the fleet page (hub/fleet):
// they see and act on their tenant's stores only. The password is kept as
// its argon2id hash.
type User struct {
	Tenant  string    `json:"tenant"`
	Name    string    `json:"name"`
	Hash    string    `json:"hash"`
	Created time.Time `json:"created"`
}

// Password bounds: long enough that the sign-in throttle makes guessing
// hopeless, short enough that a hash of it is cheap to ask for.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 128
)

// argon2id parameters: OWASP's minimum for argon2id (19 MiB, 2 passes), the
// agent's manager PIN's too. A check costs tens of milliseconds and 19 MiB,
// so the fleet page runs them one at a time.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// usersBucket holds the users by "<tenant>.<name>". It is made when the
// first user is added, so a hub without users has no such bucket.
const usersBucket = "hub_users"

// maxUsersBytes bounds the users bucket: about 40,000 users.
const maxUsersBytes = 16 << 20

// CheckPassword says what is wrong with pw as a new password, or nil.
func CheckPassword(pw string) error {
	n := utf8.RuneCountInString(pw)
	if n < MinPasswordLen || n > MaxPasswordLen {
		return fmt.Errorf("a password must be %d to %d characters, got %d", MinPasswordLen, MaxPasswordLen, n)
	}
	if strings.TrimSpace(pw) != pw {
		return errors.New("a password must not start or end with a space (a copy-paste mistake)")
	}
	return nil
}

// hashPassword returns the PHC-style argon2id hash of pw with a new salt.
func hashPassword(pw string) string {
	salt := make([]byte, argonSaltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go 1.24+)
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemory, argonTime, argonThreads, enc.EncodeToString(salt), enc.EncodeToString(key))
}

// verifyPassword reports whether pw matches hash, in time that does not
// depend on where they differ.
func verifyPassword(hash, pw string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
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
	got := argon2.IDKey([]byte(pw), salt, t, mem, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// users returns the users bucket, made when create is set and it does not
// exist yet; without create a missing bucket is ErrNotFound.
func (s *Store) users(ctx context.Context, create bool) (jetstream.KeyValue, error) {
	kv, err := s.js.KeyValue(ctx, usersBucket)
	if err == nil || !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	if !create {
		return nil, ErrNotFound
	}
	kv, err = s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: usersBucket,
		Description: "fleet page users by tenant.name, with their password hashes",
		Storage:     jetstream.FileStorage, History: 1, MaxBytes: maxUsersBytes, MaxValueSize: 4 << 10})
	if err != nil {
		return nil, fmt.Errorf("store: bucket %s: %w", usersBucket, err)
	}
	return kv, nil
}

// AddUser records a user of an existing tenant with the hash of password;
// a name the tenant already has is ErrExists, an unknown tenant
// ErrNotFound.
func (s *Store) AddUser(ctx context.Context, tenant, name, password string) (User, error) {
	if err := ValidID(name); err != nil {
		return User{}, fmt.Errorf("user name %w", err)
	}
	if err := CheckPassword(password); err != nil {
		return User{}, err
	}
	if _, err := s.Tenant(ctx, tenant); err != nil {
		return User{}, fmt.Errorf("tenant %s: %w", tenant, err)
	}
	kv, err := s.users(ctx, true)
	if err != nil {
		return User{}, err
	}
	u := User{Tenant: tenant, Name: name, Hash: hashPassword(password), Created: time.Now().UTC()}
	if _, err := kv.Create(ctx, tenant+"."+name, mustJSON(u)); err != nil {
		return User{}, fmt.Errorf("store: add user %s of %s: %w", name, tenant, kvErr(err))
	}
	return u, nil
}

// Users lists a tenant's users by name (their hashes left out).
func (s *Store) Users(ctx context.Context, tenant string) ([]User, error) {
	kv, err := s.users(ctx, false)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := kv.ListKeysFiltered(ctx, tenant+".*")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list users of %s: %w", tenant, err)
	}
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	l.Stop()
	slices.Sort(keys)
	var out []User
	for _, k := range keys {
		var u User
		if _, err := getJSON(ctx, kv, k, &u); errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		u.Hash = ""
		out = append(out, u)
	}
	return out, nil
}

// RemoveUser deletes a tenant's user; an unknown one is ErrNotFound.
func (s *Store) RemoveUser(ctx context.Context, tenant, name string) error {
	if ValidID(name) != nil || ValidID(tenant) != nil {
		return ErrNotFound
	}
	kv, err := s.users(ctx, false)
	if err != nil {
		return err
	}
	key := tenant + "." + name
	e, err := kv.Get(ctx, key)
	if err != nil {
		return kvErr(err)
	}
	if err := kv.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
		return fmt.Errorf("store: remove user %s of %s: %w", name, tenant, kvErr(err))
	}
	return nil
}

// CheckUser returns the tenant's user whose password is password. A
// wrong password, an unknown user or tenant are all ErrNotFound, so a
// caller cannot tell which (the hash is computed either way, so the time
// does not tell either).
func (s *Store) CheckUser(ctx context.Context, tenant, name, password string) (User, error) {
	var u User
	found := false
	if ValidID(tenant) == nil && ValidID(name) == nil && len(password) <= 4*MaxPasswordLen {
		kv, err := s.users(ctx, false)
		switch {
		case err == nil:
			_, err = getJSON(ctx, kv, tenant+"."+name, &u)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return User{}, err
			}
			found = err == nil
		case !errors.Is(err, ErrNotFound):
			return User{}, err
		}
	}
	if !found {
		verifyPassword(dummyHash(), password)
		return User{}, ErrNotFound
	}
	if !verifyPassword(u.Hash, password) {
		return User{}, ErrNotFound
	}
	u.Hash = ""
	return u, nil
}

// dummyHash is checked against for an unknown user, so that a sign-in of
// a name that does not exist costs what a wrong password costs.
// It is made at the first such sign-in, not at every start.
var dummyHash = sync.OnceValue(func() string { return hashPassword("printgate-hub: no such user") })
