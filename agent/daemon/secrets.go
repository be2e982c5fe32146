package daemon

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"

	"printgate/agent/config"
)

// guardSecrets keeps what the agent keeps secret on disk out of other
// users' reach (a token another account can read is a store's cloud
// identity given away): the data dir, which holds the spool, the
// device token and the manager PIN, is tightened to 0700 when it is wider
// (a dir that already existed at 0755 stayed so before), and an API token
// file other users can read is warned about with its fix. Mode bits say
// nothing on Windows, where the installer's ACLs decide: there the ACLs of
// the data dir and the token file are read instead (guardSecretsACL).
func guardSecrets(cfg *config.Config, log *slog.Logger) {
	if runtime.GOOS == "windows" {
		guardSecretsACL(cfg, log)
		return
	}
	if fi, err := os.Stat(cfg.DataDir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		was := fi.Mode().Perm()
		if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
			log.Warn("the data dir can be read by other users of this machine, and could not be tightened: it holds the spool, the device token and the manager PIN",
				"data_dir", cfg.DataDir, "mode", modeText(was), "err", err,
				"fix", fmt.Sprintf("chmod 700 %s (as its owner or root)", cfg.DataDir))
		} else {
			log.Info("data dir tightened: other users of this machine could read it", "data_dir", cfg.DataDir, "was", modeText(was), "now", modeText(0o700))
		}
	}
	if cfg.APITokenFile == "" {
		// The token is inline: the config file is then as secret as a
		// token file, and was not looked at before.
		if cfg.APIToken != "" && cfg.Path != "" {
			if fi, err := os.Stat(cfg.Path); err == nil && fi.Mode().Perm()&0o077 != 0 {
				log.Warn("the config holds the API token and can be read by other users of this machine: whoever reads it can print and cancel tickets",
					"config", cfg.Path, "mode", modeText(fi.Mode().Perm()),
					"fix", inlineTokenFix(cfg.Path))
			}
		}
		return
	}
	if fi, err := os.Stat(cfg.APITokenFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("the API token file can be read by other users of this machine: whoever reads it can print and cancel tickets",
			"file", cfg.APITokenFile, "mode", modeText(fi.Mode().Perm()),
			"fix", fmt.Sprintf("chmod 600 %s, or write a new one with printgate token --out %s", cfg.APITokenFile, cfg.APITokenFile))
	}
}

// modeText is a permission as a person types it for chmod ("0644").
func modeText(m fs.FileMode) string { return fmt.Sprintf("%04o", uint32(m.Perm())) }

// inlineTokenFix is what to do about a config that holds api_token inline
// and that other users can read: narrow it, or move the token to a file
// only its owner reads.
func inlineTokenFix(path string) string {
	return fmt.Sprintf("chmod 600 %s, or move the token out of it: printgate token --out api-token.txt, then api_token_file = \"api-token.txt\" in place of api_token", path)
}
