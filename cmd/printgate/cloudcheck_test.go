package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"printgate/sync/cloudcheck"
	"printgate/sync/cloudtest"
)

// serveCloud serves the reference cloud, broken as b says, on loopback.
func serveCloud(t *testing.T, b cloudtest.Breakage) (wsURL, authURL string) {
	t.Helper()
	cloud := cloudtest.New(cloudtest.Options{Broken: b})
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(func() {
		cloud.Close()
		srv.Close()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath, srv.URL + "/oauth"
}

// TestCloudcheckJSON ensures `printgate cloudcheck --json` against the
// reference cloud prints the report of PROTOCOL §7 and exits 0.
func TestCloudcheckJSON(t *testing.T) {
	ws, auth := serveCloud(t, cloudtest.Breakage{})
	var out, errb bytes.Buffer
	code := dispatch([]string{"cloudcheck", "--cloud", ws, "--auth-url", auth, "--only", "handshake.token,events,pairing.device_code", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out.String(), errb.String())
	}
	var rep struct {
		Cloud   string `json:"cloud"`
		TestAPI string `json:"test_api"`
		Checks  []struct {
			Name, Status, Seen string
		} `json:"checks"`
		Passed, Failed, Skipped int
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if rep.Cloud != ws || rep.TestAPI == "" || len(rep.Checks) != 7 || rep.Passed != 7 || rep.Failed != 0 {
		t.Fatalf("report %+v", rep)
	}
	if rep.Checks[0].Name != "handshake.token" || rep.Checks[0].Status != "pass" || rep.Checks[0].Seen == "" {
		t.Errorf("first check %+v", rep.Checks[0])
	}
}

// TestCloudcheckFails ensures a broken cloud makes cloudcheck exit 1 with
// the failing check on one line, its fix under it, and the counts.
func TestCloudcheckFails(t *testing.T) {
	ws, _ := serveCloud(t, cloudtest.Breakage{ReorderBatch: true})
	var out, errb bytes.Buffer
	if code := dispatch([]string{"cloudcheck", "--cloud", ws, "--only", "events"}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out.String(), errb.String())
	}
	text := out.String()
	for _, want := range []string{"FAIL events.order — ", "\n     fix: ", "PASS events.dedupe — ", "4 passed, 1 failed, 0 skipped\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// TestCloudcheckUsage ensures usage errors exit 2 with a sentence that
// says what to give, before any connection, and that help lists the
// command.
func TestCloudcheckUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "--cloud is required"},
		{[]string{"--cloud", "ws://cloud.example.com/agent/v1"}, "use wss://"},
		{[]string{"--cloud", "wss://cloud.example.com/agent/v1", "--only", "events.nope"}, `no check or group "events.nope"`},
		{[]string{"--cloud", "wss://cloud.example.com/agent/v1", "--token", "t"}, "give both or neither"},
		{[]string{"--cloud", "wss://cloud.example.com/agent/v1", "extra"}, `unexpected argument "extra"`},
	} {
		var out, errb bytes.Buffer
		if code := dispatch(append([]string{"cloudcheck"}, tt.args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, code, errb.String(), tt.want)
		}
	}
	var out bytes.Buffer
	dispatch([]string{"help"}, &out, &out)
	if !strings.Contains(out.String(), "cloudcheck") {
		t.Errorf("help does not list cloudcheck:\n%s", out.String())
	}
	if len(cloudcheck.Names) == 0 {
		t.Fatal("no checks")
	}
}
