package probe

import (
	"testing"
	"time"

	"printgate/drivers"
	"printgate/drivers/escpos"
)

// TestProbeSessionIsTheAgents ensures printgate printers (and doctor)
// probe a printer with the session options the agent's device uses: a
// serial printer gets the agent's write timeout, so a probe of a slow line
// is bounded as the agent's writes are.
func TestProbeSessionIsTheAgents(t *testing.T) {
	for _, u := range []string{"serial:///dev/ttyS0?baud=9600", "serial:///dev/ttyS0?baud=1200&flow=xonxoff", "tcp://192.0.2.1:9100"} {
		tgt, err := drivers.ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		got := sessionCheck(tgt, true, time.Second).Options.Session
		want := escpos.SessionOptions{ExpectAnswers: true, XonXoff: tgt.Line.Flow == drivers.FlowXONXOFF}
		if tgt.Scheme == drivers.SchemeSerial {
			want.WriteTimeout = max(10*time.Second, escpos.JobTimeout(0, 4096, tgt.Line.Baud))
		}
		if got != want {
			t.Errorf("%s: probe session %+v, want the agent's %+v", u, got, want)
		}
	}
}
