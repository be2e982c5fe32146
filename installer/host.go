package installer

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
