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
	return build(root, dir, "./cmd/helm-safe-upgrade", "helm-safe-upgrade", "-X main.version="+version+" -X main.commit="+commit)
}

// BuildShim builds the tool (Build) and, beside it as helm, the drop-in
// helm's dispatcher (cmd/helm-shim), laid out as in the release archive's
// bin/; it returns both paths. Keep dir off PATH: its helm is the shim.
func BuildShim(root, dir, version, commit string) (tool, dispatcher string, err error) {
	if tool, err = Build(root, dir, version, commit); err != nil {
		return "", "", err
	}
	dispatcher, err = build(root, dir, "./cmd/helm-shim", "helm", "")
	return tool, dispatcher, err
}

// build builds the main package pkg of root into dir/name.
func build(root, dir, pkg, name, ldflags string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	x := exec.Command("go", "build", "-ldflags", ldflags, "-o", filepath.Join(tmp, name), pkg)
	x.Dir = root
	if out, err := x.CombinedOutput(); err != nil {
		return "", errors.New("go build " + pkg + ": " + err.Error() + "\n" + string(out))
	}
	path := filepath.Join(dir, name)
	return path, os.Rename(filepath.Join(tmp, name), path)
}
