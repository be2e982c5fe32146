package tlscert

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Fingerprint is the SHA-256 of a certificate's DER encoding (for a
// tls.Certificate, its Certificate[0]) as browsers and openssl show it:
// 32 uppercase hex pairs separated by colons, "3A:F0:...:9C".
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	pairs := make([]string, len(sum))
	for i, b := range sum {
		pairs[i] = strings.ToUpper(hex.EncodeToString([]byte{b}))
	}
	return strings.Join(pairs, ":")
}
