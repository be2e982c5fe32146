package store

import (
	"context"
	"errors"
	"testing"
)

// TestRevokeAPIKey ensures key revoke's promise: the revoked key's secret
// is ErrRevoked from then on (also after a restart), the tenant's other key
// still authenticates, the list shows both with the revoked one marked,
// and another tenant's key id is ErrNotFound and stays active.
func TestRevokeAPIKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	seed(t, s)
	if _, err := s.AddTenant(ctx, "other", ""); err != nil {
		t.Fatal(err)
	}
	k1, sec1, err := s.AddAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	_, sec2, err := s.AddAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	ko, seco, err := s.AddAPIKey(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeAPIKey(ctx, "acme", ko.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoke of another tenant's key: %v, want ErrNotFound", err)
	}
	if k, err := s.RevokeAPIKey(ctx, "acme", k1.ID); err != nil || !k.Revoked {
		t.Fatalf("revoke: %+v %v", k, err)
	}
	if k, err := s.RevokeAPIKey(ctx, "acme", k1.ID); err != nil || !k.Revoked {
		t.Errorf("revoke again: %+v %v; want the revoked key, no error", k, err)
	}
	s.Close()
	s = open(t, dir)
	if _, err := s.APIKey(ctx, sec1); !errors.Is(err, ErrRevoked) {
		t.Errorf("the revoked key after a restart: %v, want ErrRevoked", err)
	}
	for _, sec := range []string{sec2, seco} {
		if _, err := s.APIKey(ctx, sec); err != nil {
			t.Errorf("a key not revoked: %v", err)
		}
	}
	keys, err := s.APIKeys(ctx, "acme")
	if err != nil || len(keys) != 2 || keys[0].ID != k1.ID || !keys[0].Revoked || keys[1].Revoked {
		t.Errorf("APIKeys(acme): %+v %v; want k1 revoked then the second active", keys, err)
	}
}
