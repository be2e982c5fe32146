package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Tenant is a chain: the owner of stores and API keys.
type Tenant struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	Created time.Time `json:"created"`
}

// StoreInfo is one store of a tenant: where one agent prints.
type StoreInfo struct {
	ID      string    `json:"id"`
	Tenant  string    `json:"tenant"`
	Name    string    `json:"name,omitempty"`
	Created time.Time `json:"created"`
}

// APIKey is a tenant's key for the order API, stored by the hash of the
// secret; the secret itself is shown once, when it is made.
type APIKey struct {
	ID      string    `json:"id"` // the first 12 hex digits of the hash: names the key in lists and logs
	Tenant  string    `json:"tenant"`
	Created time.Time `json:"created"`
	Revoked bool      `json:"revoked,omitempty"`
}

// Device is a device token of one store's agent, stored by the hash of the
// token. AgentID is bound at the first connection that uses it.
type Device struct {
	ID      string    `json:"id"` // as APIKey.ID
	Store   string    `json:"store"`
	Tenant  string    `json:"tenant"`
	AgentID string    `json:"agent_id,omitempty"`
	Created time.Time `json:"created"`
	Revoked bool      `json:"revoked,omitempty"`
}

// AddTenant records a new tenant; an id already taken is ErrExists.
func (s *Store) AddTenant(ctx context.Context, id, name string) (Tenant, error) {
	if err := ValidID(id); err != nil {
		return Tenant{}, fmt.Errorf("tenant id %w", err)
	}
	t := Tenant{ID: id, Name: name, Created: time.Now().UTC()}
	if _, err := s.tenants.Create(ctx, id, mustJSON(t)); err != nil {
		return Tenant{}, fmt.Errorf("store: add tenant %s: %w", id, kvErr(err))
	}
	return t, nil
}

// Tenant returns a tenant, or ErrNotFound.
func (s *Store) Tenant(ctx context.Context, id string) (Tenant, error) {
	var t Tenant
	_, err := getJSON(ctx, s.tenants, id, &t)
	return t, err
}

// AddStore records a new store of an existing tenant. Store ids are unique
// across tenants: they name the store in the API's paths.
func (s *Store) AddStore(ctx context.Context, tenant, id, name string) (StoreInfo, error) {
	if err := ValidID(id); err != nil {
		return StoreInfo{}, fmt.Errorf("store id %w", err)
	}
	if _, err := s.Tenant(ctx, tenant); err != nil {
		return StoreInfo{}, fmt.Errorf("tenant %s: %w", tenant, err)
	}
	st := StoreInfo{ID: id, Tenant: tenant, Name: name, Created: time.Now().UTC()}
	if _, err := s.stores.Create(ctx, id, mustJSON(st)); err != nil {
		return StoreInfo{}, fmt.Errorf("store: add store %s: %w", id, kvErr(err))
	}
	return st, nil
}

// StoreInfo returns a store, or ErrNotFound.
func (s *Store) StoreInfo(ctx context.Context, id string) (StoreInfo, error) {
	var st StoreInfo
	if ValidID(id) != nil {
		return st, ErrNotFound
	}
	_, err := getJSON(ctx, s.stores, id, &st)
	return st, err
}

// Stores returns a tenant's stores, by id. It reads the whole directory
// (thousands of stores, not millions).
func (s *Store) Stores(ctx context.Context, tenant string) ([]StoreInfo, error) {
	l, err := s.stores.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list stores: %w", err)
	}
	defer l.Stop()
	var ids []string
	for k := range l.Keys() {
		ids = append(ids, k)
	}
	slices.Sort(ids)
	var out []StoreInfo
	for _, id := range ids {
		var st StoreInfo
		if _, err := getJSON(ctx, s.stores, id, &st); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, err
		}
		if st.Tenant == tenant {
			out = append(out, st)
		}
	}
	return out, nil
}

// AddAPIKey makes a new API key for a tenant and returns its secret, which
// is not stored and cannot be shown again.
func (s *Store) AddAPIKey(ctx context.Context, tenant string) (APIKey, string, error) {
	if _, err := s.Tenant(ctx, tenant); err != nil {
		return APIKey{}, "", fmt.Errorf("tenant %s: %w", tenant, err)
	}
	secret, err := newSecret("pgk_")
	if err != nil {
		return APIKey{}, "", err
	}
	h := hashSecret(secret)
	k := APIKey{ID: h[:12], Tenant: tenant, Created: time.Now().UTC()}
	if _, err := s.apikeys.Create(ctx, h, mustJSON(k)); err != nil {
		return APIKey{}, "", fmt.Errorf("store: add API key: %w", kvErr(err))
	}
	return k, secret, nil
}

// APIKey returns the key whose secret this is: ErrNotFound for an unknown
// secret, ErrRevoked for a revoked one.
func (s *Store) APIKey(ctx context.Context, secret string) (APIKey, error) {
	var k APIKey
	if _, err := getJSON(ctx, s.apikeys, hashSecret(secret), &k); err != nil {
		return k, err
	}
	if k.Revoked {
		return k, ErrRevoked
	}
	return k, nil
}

// AddDevice makes a device token for a store's agent, as an approved
// pairing would, and returns it; only its hash is stored. agentID binds it
// to that agent at once; empty, the first agent that connects with it.
func (s *Store) AddDevice(ctx context.Context, store, agentID string) (Device, string, error) {
	st, err := s.StoreInfo(ctx, store)
	if err != nil {
		return Device{}, "", fmt.Errorf("store %s: %w", store, err)
	}
	secret, err := newSecret("pgd_")
	if err != nil {
		return Device{}, "", err
	}
	h := hashSecret(secret)
	d := Device{ID: h[:12], Store: st.ID, Tenant: st.Tenant, AgentID: agentID, Created: time.Now().UTC()}
	if _, err := s.devicesKV.Create(ctx, h, mustJSON(d)); err != nil {
		return Device{}, "", fmt.Errorf("store: add device: %w", kvErr(err))
	}
	return d, secret, nil
}

// RevokeDevices revokes every device token of store: the handshakes that
// use them are refused from now on. It returns how many it revoked. It
// reads every token (an operator's action, not a hot path).
func (s *Store) RevokeDevices(ctx context.Context, store string) (int, error) {
	l, err := s.devicesKV.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: list devices: %w", err)
	}
	defer l.Stop()
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	n := 0
	for _, k := range keys {
		var d Device
		rev, err := getJSON(ctx, s.devicesKV, k, &d)
		if errors.Is(err, ErrNotFound) || err == nil && (d.Store != store || d.Revoked) {
			continue
		}
		if err != nil {
			return n, err
		}
		d.Revoked = true
		if _, err := s.devicesKV.Update(ctx, k, mustJSON(d), rev); err != nil {
			return n, fmt.Errorf("store: revoke device %s: %w", d.ID, kvErr(err))
		}
		n++
	}
	return n, nil
}

// AuthDevice checks a device token at an agent's handshake: ErrNotFound for
// an unknown token, ErrRevoked for a revoked one, ErrExists for a token
// bound to another agent_id. A token not yet bound is bound to agentID
// (compare-and-set: of two agents racing with one token, one wins).
func (s *Store) AuthDevice(ctx context.Context, token, agentID string) (Device, error) {
	var got Device
	_, err := casJSON(ctx, s.devicesKV, hashSecret(token), func(d *Device, found bool) (bool, error) {
		got = *d
		switch {
		case !found:
			return false, ErrNotFound
		case d.Revoked:
			return false, ErrRevoked
		case d.AgentID == agentID:
			return false, nil
		case d.AgentID != "":
			return false, fmt.Errorf("the token is bound to agent %s: %w", d.AgentID, ErrExists)
		}
		d.AgentID = agentID
		got = *d
		return true, nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrRevoked) && !errors.Is(err, ErrExists) {
		return got, fmt.Errorf("store: bind device: %w", err)
	}
	return got, err
}

// getJSON reads key into v and returns its revision; ErrNotFound when
// there is no such key.
func getJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any) (uint64, error) {
	e, err := kv.Get(ctx, key)
	if err != nil {
		return 0, kvErr(err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return 0, fmt.Errorf("store: %s %s: %w", kv.Bucket(), key, err)
	}
	return e.Revision(), nil
}

// mustJSON encodes a record type of this package, which always encodes.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("store: encode %T: %v", v, err))
	}
	return b
}

// kvErr maps the engine's errors to this package's.
func kvErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return ErrNotFound
	case errors.Is(err, jetstream.ErrKeyExists):
		return fmt.Errorf("%w (%v)", ErrExists, err)
	case strings.Contains(err.Error(), "maximum bytes"), strings.Contains(err.Error(), "maximum messages"):
		return fmt.Errorf("%w (%v)", ErrFull, err)
	}
	return err
}
