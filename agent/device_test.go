package agent

import (
	"testing"
	"time"

	"printgate/drivers"
	"printgate/drivers/escpos"
)

// TestDeviceSession ensures a device's session options follow its target:
// a serial line gets a write timeout that fits a 4 KiB chunk at its baud
// rate (10 s at least) and XON/XOFF when its URL says so, a network
// printer neither, and a timeout the caller chose is kept.
func TestDeviceSession(t *testing.T) {
	for _, c := range []struct {
		url    string
		expect bool
		in     escpos.SessionOptions
		want   escpos.SessionOptions
	}{
		{"tcp://192.0.2.1:9100", true, escpos.SessionOptions{}, escpos.SessionOptions{ExpectAnswers: true}},
		{"serial:///dev/ttyS0?baud=19200", false, escpos.SessionOptions{}, escpos.SessionOptions{WriteTimeout: 10 * time.Second}},
		{"serial:///dev/ttyS0?baud=1200&flow=xonxoff", true, escpos.SessionOptions{},
			escpos.SessionOptions{ExpectAnswers: true, XonXoff: true, WriteTimeout: escpos.JobTimeout(0, 4096, 1200)}},
		{"serial:///dev/ttyS0", true, escpos.SessionOptions{WriteTimeout: time.Second}, escpos.SessionOptions{ExpectAnswers: true, WriteTimeout: time.Second}},
	} {
		tgt, err := drivers.ParseURL(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := DeviceSession(tgt, c.expect, c.in); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.url, got, c.want)
		}
	}
}
