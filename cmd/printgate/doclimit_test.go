package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHeavyDocumentRefusedAtIntake runs the real binary: a document whose
// images add up to more than a document may hold (five white 2048×2048
// PNGs, 43 KB of JSON), and one whose image prints taller than an image
// may, are refused at intake with 400 bad_document naming the line,
// instead of being accepted and then rendering in the printer's lane
// (109 such images held it 35 s and ended FAILED RENDER). The printer's
// next ticket prints at once.
func TestHeavyDocumentRefusedAtIntake(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildPrintgate(t)
	config, _, base, _ := promiseSetup(t)
	proc := startAgent(t, bin, config, base)
	defer proc.kill(t)
	white := func(w, h int) string {
		img := image.NewGray(image.Rect(0, 0, w, h))
		for i := range img.Pix {
			img.Pix[i] = 0xFF
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b.Bytes())
	}
	big := white(2048, 2048)
	var many []string
	for range 5 {
		many = append(many, fmt.Sprintf(`{"image":%q}`, big))
	}
	for _, tc := range []struct{ name, lines, want string }{
		{"five 2048×2048 images", strings.Join(many, ","), "line 5: images add up to"},
		{"an image 2600 dots high", fmt.Sprintf(`{"text":"x"},{"image":%q}`, white(100, 2600)), "line 2: image is 2600 dots high"},
	} {
		body := `{"task_no":"HEAVY_v1","printer":"k","document":{"lines":[` + tc.lines + `]}}`
		req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+promiseToken)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		t.Logf("%s (%d bytes): %d in %s", tc.name, len(body), resp.StatusCode, time.Since(start).Round(time.Millisecond))
		if resp.StatusCode != http.StatusBadRequest || e.Error.Code != "bad_document" || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s: %d %+v, want 400 bad_document naming %q", tc.name, resp.StatusCode, e.Error, tc.want)
		}
	}
	if code := submit(base, promiseToken, "NEXT_v1", "k"); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	waitState(t, base, promiseToken, "NEXT_v1", "PRINTED")
}
