package apispec_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"printgate/internal/apispec"
)

// TestRedoclyLint runs a real OpenAPI linter from the npm registry,
// Redocly CLI (version pinned by scripts/openapi-lint/package-lock.json),
// over docs/openapi.yaml and docs/hub-openapi.yaml with its
// recommended-strict rules: every warning is an error. It skips without
// node, except under CI=true.
func TestRedoclyLint(t *testing.T) {
	root, err := apispec.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "scripts", "openapi-lint")
	mods := apispec.NodeModules(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, path := range []string{apispec.YAMLPath, apispec.HubYAMLPath} {
		cmd := exec.CommandContext(ctx, apispec.Bin(mods, "redocly"), "lint", "--format=stylish",
			"--config", filepath.Join(dir, "redocly.yaml"), filepath.Join(root, path))
		cmd.Env = apispec.NodeEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("redocly lint %s: %v\n%s", path, err, out)
			continue
		}
		t.Logf("redocly lint %s: passed", path)
	}
}
