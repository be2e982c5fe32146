// Package config reads printgate's TOML config (docs/PROTOCOL.md §2) into a
// validated Config: defaults applied, every problem reported at once as
// FILE:LINE: plain sentence, secrets redacted wherever they are printed.
// Load is what `printgate run` and the service call.
package config
