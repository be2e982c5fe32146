package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent"
	"printgate/drivers/printertest"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
)

// cloudRig is the real service, paired with a reference cloud and printing
// to one emulated printer, k: the setup of every test here that runs the
// service against a cloud.
type cloudRig struct {
	cloud   *cloudtest.Cloud
	p       *printertest.Printer
	dir     string
	agentID string
	base    string          // the local API
	limit   context.Context // bounds the test's waits

	stopOnce sync.Once
	stopErr  error
	cancel   context.CancelFunc
	done     chan error
}

// startCloudRig starts the cloud (with o), the printer and the service, its
// config's [cloud] table extended by cloudTOML lines, and waits until the
// link is connected; t.Cleanup stops the service (failing on its error)
// and the rest.
func startCloudRig(t *testing.T, o cloudtest.Options, cloudTOML string, wait time.Duration) *cloudRig {
	t.Helper()
	r := &cloudRig{cloud: cloudtest.New(o), dir: t.TempDir(), done: make(chan error, 1)}
	srv := httptest.NewServer(r.cloud.Handler())
	t.Cleanup(func() { srv.Close(); r.cloud.Close() })
	r.p = printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := r.p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.p.Close() })
	var err error
	if r.agentID, err = agent.LoadOrCreateAgentID(r.dir); err != nil {
		t.Fatal(err)
	}
	if err := pair.Save(r.dir, r.cloud.IssueToken(r.agentID)); err != nil {
		t.Fatal(err)
	}
	port := freeTCPPort(t)
	r.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath
	cfgPath := filepath.Join(r.dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = \"tok-0123456789abcdef01234\"\n[cloud]\nurl = %q\nauth_url = %q\n%s[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n",
		r.dir, port, wsURL, srv.URL+"/oauth", cloudTOML, r.p.Addr())
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- runService(ctx, cfgPath, io.Discard, nil) }()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("runService: %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	limit, stopLimit := context.WithTimeout(context.Background(), wait)
	t.Cleanup(stopLimit)
	r.limit = limit
	if err := r.cloud.WaitConnected(limit, r.agentID, true); err != nil {
		t.Fatalf("the link never connected: %v", err)
	}
	return r
}

// stop stops the service once and returns what runService returned.
func (r *cloudRig) stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		r.stopErr = <-r.done
	})
	return r.stopErr
}
