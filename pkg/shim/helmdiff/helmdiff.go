// Package helmdiff is what the drop-in helm knows about the helm-diff
// plugin: whether it serves `helm diff upgrade` itself and the row it adds
// to `helm plugin list`. It is apart from package shim because it reads
// YAML: the dispatcher (cmd/helm-shim) links package shim only, and a YAML
// library's initialisation alone costs it milliseconds.
package helmdiff

import (
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// Env chooses who answers `helm diff upgrade`: "1" the shim always,
// "0" never (the real helm, so the helm-diff plugin or Helm's "unknown
// command"), unset the shim when no helm-diff plugin is installed.
const Env = "SAFE_UPGRADE_DIFF"

// PluginName is the helm-diff plugin's name, the word orchestrators look
// for in `helm plugin list`.
const PluginName = "diff"

// Serves reports whether the shim answers `helm diff upgrade`, given
// Env's value and Helm's plugin folders (HELM_PLUGINS, a path list).
func Serves(env, pluginDirs string) (bool, error) {
	switch env {
	case "1":
		return true, nil
	case "0":
		return false, nil
	case "":
		return !HasPlugin(pluginDirs, PluginName), nil
	}
	return false, fmt.Errorf("%s=%q: want 1 (the shim serves helm diff upgrade), 0 (never) or unset (when no helm-diff plugin is installed)", Env, env)
}

// HasPlugin reports whether a plugin named name is installed in one of
// pluginDirs (a path list), by its plugin.yaml as Helm 3 and 4 load it.
// An unreadable plugin does not count: Helm would not load it either.
func HasPlugin(pluginDirs, name string) bool {
	for _, dir := range filepath.SplitList(pluginDirs) {
		manifests, _ := filepath.Glob(filepath.Join(dir, "*", "plugin.yaml"))
		for _, m := range manifests {
			data, err := inputfile.Read(m, "a plugin's plugin.yaml", inputfile.SmallMax)
			if err != nil {
				continue
			}
			var meta struct {
				Name string `json:"name"`
			}
			if yaml.Unmarshal(data, &meta) == nil && meta.Name == name {
				return true
			}
		}
	}
	return false
}

// PluginListLine is the row the shim adds to `helm plugin list` when it
// serves `helm diff upgrade`, so orchestrators that look for the diff
// plugin there (Helmsman) start. It is tab-separated like Helm's rows.
func PluginListLine(version string) string {
	return strings.Join([]string{PluginName, version, "served by helm-safe-upgrade's helm shim (helm diff upgrade only; " + Env + "=0 turns it off)"}, "\t") + "\n"
}
