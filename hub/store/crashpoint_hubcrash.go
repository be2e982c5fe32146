//go:build hubcrash

package store

import (
	"fmt"
	"os"
	"time"
)

// crashEnv names the crash point a hub built with -tags hubcrash stops at
// (crash tests only; the release build has no crash points).
const crashEnv = "PRINTGATE_HUB_CRASH_AT"

// crashPoint stops the goroutine that reaches the point crashEnv names,
// for good, after saying so on stderr: the test that set it then
// SIGKILLs the process, which dies with the point reached and nothing
// after it done. With any point set, the fan-out stops at its own
// (fanOutPoint) too, silently.
func crashPoint(name string) {
	at := os.Getenv(crashEnv)
	if at == "" || name != at && name != fanOutPoint {
		return
	}
	if name == at {
		fmt.Fprintf(os.Stderr, "printgate-hub: crash point %s reached\n", name)
	}
	for {
		time.Sleep(time.Hour)
	}
}
