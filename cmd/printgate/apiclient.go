package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"printgate/agent/apiclient"
	"printgate/agent/config"
)

// loadForAPI loads the config for one of the API commands and builds its
// client; a failure is printed as "printgate NAME: ..." and yields exit 1.
func loadForAPI(name, path string, stderr io.Writer) (*config.Config, *apiclient.Client, bool) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "printgate %s: %v\n", name, err)
		return nil, nil, false
	}
	c, err := apiclient.ForConfig(cfg, 10*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "printgate %s: %v\n", name, err)
		return nil, nil, false
	}
	return cfg, c, true
}

// apiClient, newAPIClient and apiError keep decode.go's calls as they are
// (another change rewrites that file's imports); new code uses
// apiclient.Client directly.
type apiClient struct {
	*apiclient.Client
	base string
}

type apiError = apiclient.Error

func newAPIClient(cfg *config.Config, timeout time.Duration) (*apiClient, error) {
	c, err := apiclient.ForConfig(cfg, timeout)
	if err != nil {
		return nil, err
	}
	return &apiClient{Client: c, base: c.Base()}, nil
}

func (c *apiClient) task(ctx context.Context, taskNo string) (apiclient.Task, error) {
	return c.Task(ctx, taskNo)
}

func (c *apiClient) open(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	return c.Open(ctx, method, path, body)
}
