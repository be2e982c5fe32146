package pair

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"printgate/sync/cloudtest"
)

// TestPairAgainstReferenceCloud runs the flow against the reference cloud
// of PROTOCOL §7 rather than this package's own fake server: an approved
// code gives a token the cloud then accepts, a denied code ends with
// ErrDenied, and a code nobody acts on ends with ErrExpired.
func TestPairAgainstReferenceCloud(t *testing.T) {
	cloud := cloudtest.New(cloudtest.Options{PollInterval: time.Second, DeviceCodeLifetime: 2 * time.Second})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name   string
		decide func(code string) error
		want   error
	}{
		{"approved", cloud.Approve, nil},
		{"denied", cloud.Deny, ErrDenied},
		{"expired", func(string) error { return nil }, ErrExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(ctx, srv.URL+"/oauth", srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.decide(p.UserCode); err != nil {
				t.Fatal(err)
			}
			tok, err := p.Wait(ctx)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Wait: %q, %v; want %v", tok, err, tc.want)
			}
			if tc.want == nil && tok == "" {
				t.Error("approved without a token")
			}
		})
	}
}
