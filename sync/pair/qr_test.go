package pair

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	qrcode "github.com/skip2/go-qrcode"
)

// unblock reads QRText's drawing back into modules (true = dark): each
// character is two rows, a block or the top (▀) or bottom (▄) half of one
// light. An odd last row is drawn with its lower half blank.
func unblock(t *testing.T, s string) [][]bool {
	t.Helper()
	var rows [][]bool
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		var top, bottom []bool
		for _, r := range line {
			switch r {
			case '█':
				top, bottom = append(top, false), append(bottom, false)
			case '▀':
				top, bottom = append(top, false), append(bottom, true)
			case '▄':
				top, bottom = append(top, true), append(bottom, false)
			case ' ':
				top, bottom = append(top, true), append(bottom, true)
			default:
				t.Fatalf("unexpected character %q in the drawing", r)
			}
		}
		rows = append(rows, top, bottom)
	}
	return rows
}

// TestQRText ensures the drawing holds every module of the QR code of the
// content, square with its quiet zone and finder patterns, and that other
// content draws another code.
func TestQRText(t *testing.T) {
	const url = "https://print.example.com/device?user_code=WDJB-MJHT"
	s, err := QRText(url)
	if err != nil {
		t.Fatal(err)
	}
	rows := unblock(t, s)
	n := len(rows[0])
	// 53 bytes at medium correction is version 4: 33 modules and 2×4 quiet.
	if n != 41 {
		t.Errorf("%d modules wide, want 41", n)
	}
	// The drawing has an odd module count: its last character row has a
	// lower half of terminal background (read as dark), not part of the code.
	if len(rows) != n+1 || !allDark(rows[n]) {
		t.Fatalf("%d rows for %d columns: not square", len(rows), n)
	}
	rows = rows[:n]
	q, _ := qrcode.New(url, qrcode.Medium)
	want := q.Bitmap()
	for y := range want {
		for x := range want[y] {
			if rows[y][x] != want[y][x] {
				t.Fatalf("module (%d,%d) is %v, want %v", x, y, rows[y][x], want[y][x])
			}
		}
	}
	// Finder patterns: a dark 7×7 ring around a light ring around a dark
	// 3×3, inside the quiet zone, at three corners.
	for _, c := range [][2]int{{4, 4}, {n - 11, 4}, {4, n - 11}} {
		for y := 0; y < 7; y++ {
			for x := 0; x < 7; x++ {
				ring := max(abs(x-3), abs(y-3))
				if dark := rows[c[1]+y][c[0]+x]; dark != (ring != 2) {
					t.Fatalf("finder at %v: module (%d,%d) dark=%v", c, x, y, dark)
				}
			}
		}
	}
	if !allLight(rows[0]) || !allLight(rows[n-1]) {
		t.Error("no quiet zone")
	}
	other, err := QRText(url + "X")
	if err != nil || other == s {
		t.Errorf("other content drew the same code (%v)", err)
	}
	if _, err := QRText(""); err == nil {
		t.Error("empty content accepted")
	}
	if _, err := QRText(strings.Repeat("x", 3000)); err == nil {
		t.Error("content too long for a QR code accepted")
	}
}

// TestQRTextScans ensures a QR scanner reads the content back from the
// drawing, when zbarimg (zbar-tools) is installed.
func TestQRTextScans(t *testing.T) {
	zbar, err := exec.LookPath("zbarimg")
	if err != nil {
		t.Skip("zbarimg not installed (apt-get install zbar-tools)")
	}
	const url = "https://print.example.com/device?user_code=WDJB-MJHT"
	s, err := QRText(url)
	if err != nil {
		t.Fatal(err)
	}
	rows := unblock(t, s)
	const scale = 8
	img := image.NewGray(image.Rect(0, 0, len(rows[0])*scale, len(rows)*scale))
	for y, row := range rows {
		for x, dark := range row {
			c := color.Gray{Y: 255}
			if dark {
				c.Y = 0
			}
			for dy := 0; dy < scale; dy++ {
				for dx := 0; dx < scale; dx++ {
					img.SetGray(x*scale+dx, y*scale+dy, c)
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "qr.png")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(zbar, "--quiet", "--raw", path).Output()
	if err != nil {
		t.Fatalf("zbarimg: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != url {
		t.Errorf("scanned %q, want %q", got, url)
	}
}

func allLight(row []bool) bool {
	for _, d := range row {
		if d {
			return false
		}
	}
	return true
}

func allDark(row []bool) bool {
	for _, d := range row {
		if !d {
			return false
		}
	}
	return true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
