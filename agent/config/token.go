package config

import (
	"crypto/rand"
	"encoding/base32"
)

// NewToken returns a fresh API token: 160 random bits as 32 characters of
// base32 (A-Z, 2-7), easy to type into a POS and well over MinTokenLength.
func NewToken() string {
	b := make([]byte, 20)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)
}
