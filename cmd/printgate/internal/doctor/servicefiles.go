//go:build unix

package doctor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"printgate/agent/config"
	"printgate/agent/tlscert"
	"printgate/agent/web"
	"printgate/sync/pair"
)

// serviceFile is one file the service reads, and what it is, for the line
// that names it.
type serviceFile struct {
	path, what string
	// dir marks the data dir, which the service also writes.
	dir bool
}

// serviceFiles lists what the agent opens at start and while it runs that
// a person may have written with sudo: the config, the API token, the data
// dir and the files the CLI and the agent keep in it. A file that does not
// exist is left out (the agent makes it, or it is optional).
func serviceFiles(cfg *config.Config) []serviceFile {
	list := []serviceFile{{cfg.Path, "the config", false}}
	if cfg.APITokenFile != "" {
		list = append(list, serviceFile{cfg.APITokenFile, "the API token", false})
	}
	if cfg.TLS.Cert != "" {
		list = append(list, serviceFile{cfg.TLS.Cert, "the TLS certificate", false}, serviceFile{cfg.TLS.Key, "the TLS key", false})
	}
	list = append(list, serviceFile{cfg.DataDir, "the data dir", true})
	list = append(list, []serviceFile{
		{web.PINPath(cfg.DataDir), "the manager PIN", false},
		{web.SetupCodePath(cfg.DataDir), "the first-run setup code", false},
		{pair.TokenPath(cfg.DataDir), "the device token", false},
		{filepath.Join(cfg.DataDir, "agent-id"), "the agent id", false},
		{filepath.Join(cfg.DataDir, "spool.db"), "the spool", false},
		{filepath.Join(cfg.DataDir, tlscert.CertFile), "the self-signed certificate", false},
		{filepath.Join(cfg.DataDir, tlscert.KeyFile), "the self-signed key", false},
	}...)
	out := list[:0]
	for _, f := range list {
		if _, err := os.Stat(f.path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		out = append(out, f)
	}
	return out
}
