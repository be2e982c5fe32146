package main

import (
	"fmt"
	"io"
	"time"

	"printgate/agent/apiclient"
	"printgate/agent/config"
)

// loadForAPI loads the config for one of the API commands and builds its
// client; a failure is printed as "printgate NAME: ..." and yields exit 1.
func loadForAPI(name, path string, stderr io.Writer) (*config.Config, *apiclient.Client, bool) {
	cfg, ok := loadConfig(name, path, stderr)
	if !ok {
		return nil, nil, false
	}
	c, err := apiclient.ForConfig(cfg, 10*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "printgate %s: %v\n", name, err)
		return nil, nil, false
	}
	return cfg, c, true
}
