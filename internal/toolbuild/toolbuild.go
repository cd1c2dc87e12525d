// Package toolbuild builds the tool's binary for tests that run it as users
// do (a separate process: the Helm plugin, the release archive, the helm
// shim).
package toolbuild

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// Build builds cmd/helm-safe-upgrade of the repository at root into dir,
// with the release build's -ldflags stamping version and commit, and
// returns its path. It uses make build's flags (no -trimpath, which is part
// of every package's build-cache key), so it only links what go test and
// make build compiled already. The binary is built beside and renamed into place, so a
// concurrent reader never sees half a file.
func Build(root, dir, version, commit string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	x := exec.Command("go", "build",
		"-ldflags", "-X main.version="+version+" -X main.commit="+commit,
		"-o", filepath.Join(tmp, "helm-safe-upgrade"), "./cmd/helm-safe-upgrade")
	x.Dir = root
	if out, err := x.CombinedOutput(); err != nil {
		return "", errors.New("go build ./cmd/helm-safe-upgrade: " + err.Error() + "\n" + string(out))
	}
	path := filepath.Join(dir, "helm-safe-upgrade")
	return path, os.Rename(filepath.Join(tmp, "helm-safe-upgrade"), path)
}
