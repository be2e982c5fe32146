package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/agent"
	"printgate/agent/api"
	"printgate/drivers/printertest"
	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// TestCloudJobEndingInsideCommandRejected runs the service against the
// reference cloud (issue 22 §3): a cloud job whose payload ends inside a
// command (GS ( k declaring 256 more bytes) is answered job_ack rejected
// bad_payload naming the command and its offset, and a resend of a task_no
// already known with such a payload is the duplicate it is.
func TestCloudJobEndingInsideCommandRejected(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end over loopback")
	}
	cloud := cloudtest.New(cloudtest.Options{})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir := t.TempDir()
	agentID, err := agent.LoadOrCreateAgentID(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.Save(dir, cloud.IssueToken(agentID)); err != nil {
		t.Fatal(err)
	}
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath
	cfgPath := filepath.Join(dir, "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = \"tok-0123456789abcdef01234\"\n[cloud]\nurl = %q\nauth_url = %q\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n",
		dir, freeTCPPort(t), wsURL, srv.URL+"/oauth", p.Addr())
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runService(ctx, cfgPath, io.Discard, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runService: %v", err)
		}
	}()
	limit, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	if err := cloud.WaitConnected(limit, agentID, true); err != nil {
		t.Fatalf("the link never connected: %v", err)
	}
	cut := append([]byte("TICKET\n"), 0x1d, 0x28, 0x6b, 0x00, 0x01)
	for _, j := range []wire.Job{
		{TaskNo: "CUT_v1", Printer: "k", Payload: cut},
		{TaskNo: "OK_v1", Printer: "k", Payload: []byte("TICKET OK\n\x1dV\x00")},
		{TaskNo: "OK_v1", Printer: "k", Payload: cut},
	} {
		if err := cloud.Queue(agentID, j); err != nil {
			t.Fatal(err)
		}
	}
	acks, err := cloud.WaitAcks(limit, agentID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if a := acks[0]; a.TaskNo != "CUT_v1" || a.Result != wire.ResultRejected || a.Error == nil || a.Error.Code != api.CodeBadPayload ||
		!strings.Contains(a.Error.Message, "GS ( k at offset 7") {
		t.Errorf("cut payload: ack %+v (error %+v), want rejected bad_payload naming GS ( k at offset 7", a, a.Error)
	}
	if a := acks[1]; a.TaskNo != "OK_v1" || a.Result != wire.ResultAccepted {
		t.Errorf("whole payload: ack %+v (error %+v), want accepted", a, a.Error)
	}
	if a := acks[2]; a.TaskNo != "OK_v1" || a.Result != wire.ResultDuplicate || a.Error != nil || a.State == "" || a.State == spool.StateCanceled {
		t.Errorf("resend of a known task_no with a cut payload: ack %+v (error %+v), want duplicate", a, a.Error)
	}
}
