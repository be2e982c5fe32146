package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// APIKeys returns the API keys of a tenant, revoked ones too, oldest
// first. It reads every key of the bucket (an operator's command, not a
// hot path).
func (s *Store) APIKeys(ctx context.Context, tenant string) ([]APIKey, error) {
	var out []APIKey
	err := s.eachAPIKey(ctx, func(_ string, _ uint64, k APIKey) (bool, error) {
		if k.Tenant == tenant {
			out = append(out, k)
		}
		return true, nil
	})
	slices.SortFunc(out, func(a, b APIKey) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

// RevokeAPIKey revokes the tenant's API key named id (APIKey.ID, as `key
// add` and `key list` show it): from then on the order API answers its
// secret 401. A key of another tenant is ErrNotFound, as an unknown one;
// revoking a revoked key again is no error and returns it as it is.
func (s *Store) RevokeAPIKey(ctx context.Context, tenant, id string) (APIKey, error) {
	var found APIKey
	var done bool
	err := s.eachAPIKey(ctx, func(h string, rev uint64, k APIKey) (bool, error) {
		if k.ID != id || k.Tenant != tenant {
			return true, nil
		}
		done = true
		found = k
		if k.Revoked {
			return false, nil
		}
		found.Revoked = true
		if _, err := s.apikeys.Update(ctx, h, mustJSON(found), rev); err != nil {
			return false, fmt.Errorf("store: revoke API key %s: %w", id, kvErr(err))
		}
		return false, nil
	})
	if err != nil {
		return APIKey{}, err
	}
	if !done {
		return APIKey{}, fmt.Errorf("API key %s of tenant %s: %w", id, tenant, ErrNotFound)
	}
	return found, nil
}

// eachAPIKey calls fn with each stored API key (its bucket key, revision
// and record) until fn returns false or an error.
func (s *Store) eachAPIKey(ctx context.Context, fn func(h string, rev uint64, k APIKey) (bool, error)) error {
	l, err := s.apikeys.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: list API keys: %w", err)
	}
	var hashes []string
	for h := range l.Keys() {
		hashes = append(hashes, h)
	}
	l.Stop()
	for _, h := range hashes {
		var k APIKey
		rev, err := getJSON(ctx, s.apikeys, h, &k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		more, err := fn(h, rev, k)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
