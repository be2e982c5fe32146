package daemon

import (
	"fmt"
	"log/slog"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"

	"printgate/agent/config"
)

// guardSecretsACL warns about a data dir or API token file whose ACL lets
// other accounts read it. The installer gives the data dir an
// ACL of SYSTEM, Administrators and the service; a folder made by hand, or a
// token file written into a user's Documents, inherits "Users: read" and
// every account on the PC can then print and cancel tickets.
func guardSecretsACL(cfg *config.Config, log *slog.Logger) {
	check := func(what, path, fix string) {
		readers, err := widerReaders(path)
		if err != nil {
			log.Debug("could not read the ACL", "what", what, "path", path, "err", err)
			return
		}
		if len(readers) == 0 {
			return
		}
		log.Warn(what+" can be read by other accounts of this PC", "path", path,
			"readers", strings.Join(readers, ", "), "fix", fix)
	}
	check("the data dir (spool, device token, manager PIN)", cfg.DataDir,
		fmt.Sprintf(`icacls "%s" /inheritance:r /grant:r SYSTEM:(OI)(CI)F Administrators:(OI)(CI)F "%%USERNAME%%":(OI)(CI)F, or reinstall with printgate install, which sets it`, cfg.DataDir))
	if cfg.APITokenFile != "" {
		check("the API token file (whoever reads it can print and cancel tickets)", cfg.APITokenFile,
			fmt.Sprintf(`icacls "%s" /inheritance:r /grant:r SYSTEM:F Administrators:F "%%USERNAME%%":F, or move it into the data dir`, cfg.APITokenFile))
	}
}

// readMask is every right that lets an account read a file's contents.
const readMask = windows.FILE_READ_DATA | windows.GENERIC_READ | windows.GENERIC_ALL

// widerReaders lists, by account name, who besides this process's account,
// SYSTEM, Administrators and the file's owner may read path.
func widerReaders(path string) ([]string, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return nil, fmt.Errorf("read ACL of %s: %w", path, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return nil, fmt.Errorf("ACL of %s: %w", path, err)
	}
	if dacl == nil {
		// A null DACL grants everyone everything.
		return []string{"Everyone (no ACL at all)"}, nil
	}
	trusted := []*windows.SID{}
	for _, k := range []windows.WELL_KNOWN_SID_TYPE{windows.WinLocalSystemSid, windows.WinBuiltinAdministratorsSid, windows.WinCreatorOwnerSid} {
		if sid, err := windows.CreateWellKnownSid(k); err == nil {
			trusted = append(trusted, sid)
		}
	}
	if owner, _, err := sd.Owner(); err == nil && owner != nil {
		trusted = append(trusted, owner)
	}
	if tu, err := windows.GetCurrentProcessToken().GetTokenUser(); err == nil {
		trusted = append(trusted, tu.User.Sid)
	}
	var readers []string
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return nil, fmt.Errorf("ACE %d of %s: %w", i, path, err)
		}
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || uint32(ace.Mask)&readMask == 0 {
			continue
		}
		// The SID starts at SidStart and runs past the struct, as the ACE
		// layout defines.
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if isTrusted(sid, trusted) {
			continue
		}
		readers = append(readers, accountName(sid))
	}
	return readers, nil
}

func isTrusted(sid *windows.SID, trusted []*windows.SID) bool {
	for _, t := range trusted {
		if sid.Equals(t) {
			return true
		}
	}
	return false
}

// accountName is DOMAIN\name for sid, or its S-1-… form when the name is
// unknown.
func accountName(sid *windows.SID) string {
	account, domain, _, err := sid.LookupAccount("")
	if err != nil {
		return sid.String()
	}
	if domain != "" {
		return domain + `\` + account
	}
	return account
}
