package pair

import (
	"fmt"

	qrcode "github.com/skip2/go-qrcode"
)

// QRText draws content as a QR code in terminal text, two modules per
// character row with half blocks (▀ ▄ █), with the standard four-module
// quiet zone. Light modules are drawn as blocks, so it reads on the usual
// light-on-dark terminal. Error correction is medium, which keeps an
// address of a hundred characters under 50 columns.
func QRText(content string) (string, error) {
	if content == "" {
		return "", fmt.Errorf("draw the pairing QR: nothing to encode")
	}
	q, err := qrcode.New(content, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("draw the pairing QR: %w", err)
	}
	return q.ToSmallString(false), nil
}
