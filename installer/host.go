package installer

import "io"

// ServiceDirs are the folders and files install gives the service's
// account, so the sandboxed service can use them from its first start.
type ServiceDirs struct {
	// Config is the config file; its folder is given too.
	Config string
	// DataDir is the config's data_dir; "" is the OS default.
	DataDir string
	// TokenFile is the config's api_token_file, if any.
	TokenFile string
}

// InstallService gives the service's account its folders (PrepareDirs),
// then registers the service running this binary with the config d.Config
// (RegisterService), saying on w what it did.
func InstallService(d ServiceDirs, w io.Writer) error {
	if err := PrepareDirs(d); err != nil {
		return err
	}
	exe, err := Executable()
	if err != nil {
		return err
	}
	s, err := NewService(exe, d.Config)
	if err != nil {
		return err
	}
	return RegisterService(s, exe, d.Config, w)
}

// PrepareInstall checks that the service can run this binary with the
// config at configPath (CheckServicePaths) and prepares the host for it
// (PrepareHost), before install writes anything.
func PrepareInstall(configPath string, w io.Writer) error {
	exe, err := Executable()
	if err != nil {
		return err
	}
	if err := CheckServicePaths(exe, configPath); err != nil {
		return err
	}
	return PrepareHost(w)
}
