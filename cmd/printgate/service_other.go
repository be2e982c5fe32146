//go:build !linux && !windows

package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/kardianos/service"
)

// printgate ships for Linux and Windows; on other systems (a developer's
// Mac) the service commands use kardianos's defaults without sandbox or
// service account.

func serviceOptions(exe, configPath string) service.KeyValue { return nil }

func noServiceManager() string { return "" }

func adminHint() string { return "" }

func checkServicePaths(exe, configPath string) error { return nil }

func registerService(s service.Service, w io.Writer) error {
	if err := s.Install(); err != nil {
		return fmt.Errorf("install the service: %w", err)
	}
	return nil
}

func unregisterService(s service.Service, w io.Writer) error {
	if err := s.Uninstall(); err != nil {
		return fmt.Errorf("remove the service: %w", err)
	}
	return nil
}

func underServiceManager() bool { return false }

func runUnderServiceManager(string, io.Writer) error { return errors.New("not a Windows service") }
