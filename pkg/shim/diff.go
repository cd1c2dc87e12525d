package shim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// DiffEnv chooses who answers `helm diff upgrade`: "1" the shim always,
// "0" never (the real helm, so the helm-diff plugin or Helm's "unknown
// command"), unset the shim when no helm-diff plugin is installed.
const DiffEnv = "SAFE_UPGRADE_DIFF"

// DiffPluginName is the helm-diff plugin's name, the word orchestrators look
// for in `helm plugin list`.
const DiffPluginName = "diff"

// ServesDiff reports whether the shim answers `helm diff upgrade`, given
// DiffEnv's value and Helm's plugin folders (HELM_PLUGINS, a path list).
func ServesDiff(env, pluginDirs string) (bool, error) {
	switch env {
	case "1":
		return true, nil
	case "0":
		return false, nil
	case "":
		return !HasPlugin(pluginDirs, DiffPluginName), nil
	}
	return false, fmt.Errorf("%s=%q: want 1 (the shim serves helm diff upgrade), 0 (never) or unset (when no helm-diff plugin is installed)", DiffEnv, env)
}

// HasPlugin reports whether a plugin named name is installed in one of
// pluginDirs (a path list), by its plugin.yaml as Helm 3 and 4 load it.
// An unreadable plugin does not count: Helm would not load it either.
func HasPlugin(pluginDirs, name string) bool {
	for _, dir := range filepath.SplitList(pluginDirs) {
		manifests, _ := filepath.Glob(filepath.Join(dir, "*", "plugin.yaml"))
		for _, m := range manifests {
			data, err := os.ReadFile(m)
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
	return strings.Join([]string{DiffPluginName, version, "served by helm-safe-upgrade's helm shim (helm diff upgrade only; " + DiffEnv + "=0 turns it off)"}, "\t") + "\n"
}
