package agent

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"printgate/agent/config"
	"printgate/agent/logring"
)

// TestLoggerRedactsEverywhere ensures a secret logged by mistake (an
// attribute named like a token, an Authorization header in a message)
// reaches neither the log file, nor the console, nor the ring the remote
// tail reads, while the rest of the line does.
func TestLoggerRedactsEverywhere(t *testing.T) {
	const secret = "Q7RZKX3M2VDPY4NHTW6BJ5CF"
	file := filepath.Join(t.TempDir(), "printgate.log")
	var console bytes.Buffer
	ring := logring.New(logring.Options{})
	log, closer, err := NewLogger(config.Log{Level: slog.LevelInfo, File: file}, &console, ring)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("pairing done", "device_token", secret, "printer", "kitchen")
	log.Warn("request rejected: Authorization: Bearer "+secret, "client", "192.0.2.7")
	closer.Close()
	onDisk, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"file": string(onDisk), "console": console.String(), "ring": strings.Join(ring.Lines(), "\n")} {
		if strings.Contains(out, secret) {
			t.Errorf("%s holds the secret:\n%s", name, out)
		}
		if !strings.Contains(out, "kitchen") || !strings.Contains(out, "request rejected") {
			t.Errorf("%s lost the rest of the lines:\n%s", name, out)
		}
	}
}
