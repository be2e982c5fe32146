package pair

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestStartWithClientTimeout ensures a client with a Timeout (as the agent
// and `printgate pair` use) leaves no goroutine behind once Start returns,
// although oauth2 never closes the answer's body: the timeout is carried
// by the request's context instead.
func TestStartWithClientTimeout(t *testing.T) {
	s := newDeviceServer(t, newSkipClock())
	client := &http.Client{Timeout: time.Minute, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer client.CloseIdleConnections()
	before := goleak.IgnoreCurrent()
	p, err := StartClock(context.Background(), s.authURL(), client, newSkipClock())
	if err != nil || p.UserCode == "" {
		t.Fatalf("start: %+v %v", p, err)
	}
	client.CloseIdleConnections()
	if err := goleak.Find(before); err != nil {
		t.Errorf("Start left goroutines behind: %v", err)
	}
}
