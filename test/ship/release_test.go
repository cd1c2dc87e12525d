package ship

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// platform is one release target.
type platform struct{ os, arch string }

// allPlatforms are the release's targets (.goreleaser.yaml, .krew.yaml).
var allPlatforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// AllPlatformsEnv set to 1 makes TestRelease build every platform, as a
// release does (make release-check); by default it builds this machine's
// platform only (make test): the same archive, krew and plugin checks, at a
// sixth of the cost. goreleaser check validates the whole matrix either way.
const AllPlatformsEnv = "SAFE_UPGRADE_RELEASE_ALL_PLATFORMS"

// releasePlatforms returns the platforms TestRelease builds.
func releasePlatforms() []platform {
	if os.Getenv(AllPlatformsEnv) == "1" {
		return allPlatforms
	}
	return []platform{{runtime.GOOS, runtime.GOARCH}}
}

// hostOnlyConfig narrows a goreleaser config to this machine's platform,
// built with make build's flags: without -trimpath and with the machine's
// CGO_ENABLED, both part of every package's build-cache key, the snapshot
// only links what go test and make build compiled already. The release's own
// flags are checked by make release-check, which builds every platform.
func hostOnlyConfig(t *testing.T, config string) string {
	t.Helper()
	for old, repl := range map[string]string{
		"goos: [linux, darwin, windows]":    "goos: [" + runtime.GOOS + "]",
		"goarch: [amd64, arm64]":            "goarch: [" + runtime.GOARCH + "]",
		"    env:\n      - CGO_ENABLED=0\n": "",
		"    flags:\n      - -trimpath\n":   "",
	} {
		if !strings.Contains(config, old) {
			t.Fatalf(".goreleaser.yaml has no %q to narrow to this platform; update hostOnlyConfig", old)
		}
		config = strings.Replace(config, old, repl, 1)
	}
	return config
}

// krewManifestArgs are krew-manifest.sh's arguments for dist: with only the
// built platforms when that is not all of them.
func krewManifestArgs(root, dist string, built []platform) []string {
	args := []string{filepath.Join(root, "scripts", "krew-manifest.sh")}
	if len(built) != len(allPlatforms) {
		for _, p := range built {
			args = append(args, "--platform", p.os+"_"+p.arch)
		}
	}
	return append(args, dist)
}

// TestEntryNames checks that the binary answers to both entry names (the Helm
// plugin's and krew's) and carries the version and commit that -ldflags set.
func TestEntryNames(t *testing.T) {
	bin := toolBinary(t)
	for _, tc := range []struct{ file, name string }{
		{"helm-safe-upgrade", "helm safe-upgrade"},
		{"kubectl-safe_upgrade", "kubectl safe-upgrade"},
		{"kubectl-safe_upgrade.exe", "kubectl safe-upgrade"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			copyFile(t, bin, path, 0o755)
			help := cmd{}.mustRun(t, path, "--help")
			if !strings.Contains(help, "\n  "+tc.name+" RELEASE CHART [flags]") {
				t.Errorf("%s --help has no usage line for %q:\n%s", tc.file, tc.name, help)
			}
			version := cmd{}.mustRun(t, path, "--version")
			for _, want := range []string{testVersion, "commit " + testCommit, "helm SDK v3."} {
				if !strings.Contains(version, want) {
					t.Errorf("%s --version = %q, want it to contain %q", tc.file, version, want)
				}
			}
		})
	}
}

// TestGoreleaserCheck validates .goreleaser.yaml with the pinned goreleaser.
func TestGoreleaserCheck(t *testing.T) {
	goreleaser := shipTool(t, "goreleaser")
	r := cmd{}.run(t, goreleaser, "check")
	if r.Code != 0 {
		t.Fatalf("goreleaser check:\n%s", r)
	}
}

// TestRelease builds a goreleaser snapshot (this machine's platform, or every
// platform with SAFE_UPGRADE_RELEASE_ALL_PLATFORMS=1) and checks what
// users download: the archives and checksums, the krew manifest generated
// from them installed by real krew and run by real kubectl, the Helm plugin's
// install hook downloading and verifying an archive, and an unpacked archive
// installed as a Helm plugin.
func TestRelease(t *testing.T) {
	c := testcluster.Get(t)
	rel := snapshot(t)
	dist, version, platforms := rel.dist, rel.version, rel.platforms
	sums := readChecksums(t, filepath.Join(dist, "helm-safe-upgrade_"+version+"_checksums.txt"))

	t.Run("archives", func(t *testing.T) {
		for _, p := range platforms {
			t.Run(p.os+"_"+p.arch, func(t *testing.T) {
				checkArchive(t, dist, archiveName(version, p.os, p.arch), p.os, sums)
			})
		}
	})

	host := filepath.Base(rel.hostArchive(t))
	hostArchive := rel.hostArchive(t)

	t.Run("krew", func(t *testing.T) {
		krew := shipTool(t, "krew")
		manifest := filepath.Join(t.TempDir(), "safe-upgrade.yaml")
		out := cmd{}.mustRun(t, "bash", krewManifestArgs(c.Root, dist, platforms)...)
		if err := os.WriteFile(manifest, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		checkKrewManifest(t, out, version, sums, platforms)

		krewRoot := t.TempDir()
		env := withEnv(c.Env(), "KREW_ROOT="+krewRoot, "KREW_NO_UPGRADE_CHECK=1")
		cmd{Env: env}.mustRun(t, krew, "install", "--manifest="+manifest, "--archive="+hostArchive)
		env = withEnv(env, "PATH="+filepath.Join(krewRoot, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
		kubectl := cmd{Env: env}
		help := kubectl.mustRun(t, c.Kubectl, "safe-upgrade", "--help")
		if !strings.Contains(help, "kubectl safe-upgrade RELEASE CHART") {
			t.Errorf("kubectl safe-upgrade --help does not say kubectl safe-upgrade:\n%s", help)
		}
		if v := kubectl.mustRun(t, c.Kubectl, "safe-upgrade", "--version"); !strings.Contains(v, version) {
			t.Errorf("kubectl safe-upgrade --version = %q, want the snapshot version %s", v, version)
		}

		ns := c.Namespace(t)
		c.Helm(t, "install", "demo", chart(t, "demo"), "-n", ns)
		r := kubectl.run(t, c.Kubectl, "safe-upgrade", "demo", chart(t, "demo"), "-n", ns, "--dry-run")
		if r.Code != 0 || !hasLinePrefix(r.Stdout, "Plan: 0 to create") {
			t.Errorf("kubectl safe-upgrade --dry-run: want exit 0 and the plan\n%s", r)
		}
	})

	// The archive's bin/helm is the drop-in helm: a command it does not
	// serve reaches the real helm (SAFE_UPGRADE_HELM) unchanged, and helm
	// upgrade reaches bin/helm-safe-upgrade beside it.
	t.Run("bin/helm is the shim", func(t *testing.T) {
		shimHelm := filepath.Join(rel.unpack(t), "bin", "helm")
		env := withEnv(helmHome(t, c), "SAFE_UPGRADE_HELM="+c.Helm3)
		real := cmd{Env: env}.run(t, c.Helm3, "version", "--short")
		got := cmd{Env: env}.run(t, shimHelm, "version", "--short")
		if real.Code != 0 || got.Code != real.Code || got.Stdout != real.Stdout || got.Stderr != real.Stderr {
			t.Errorf("bin/helm version --short is not the real helm's\n=== real\n%s\n=== bin/helm\n%s", real, got)
		}
		up := cmd{Env: env}.run(t, shimHelm, "upgrade", "--help-not-a-flag")
		if up.Code != 1 || !strings.Contains(up.Stderr, "help-not-a-flag") {
			t.Errorf("bin/helm upgrade with a bad flag: want exit 1 from helm-safe-upgrade naming the flag\n%s", up)
		}
	})

	t.Run("krew manifest refuses a broken dist", func(t *testing.T) {
		last := platforms[len(platforms)-1]
		for _, tc := range []struct {
			name   string
			damage func(t *testing.T, dir string)
			want   string
		}{{
			name: "archive not in the checksums file",
			damage: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "helm-safe-upgrade_"+version+"_checksums.txt"), func(s string) string {
					return dropLines(s, archiveName(version, last.os, last.arch))
				})
			},
			want: "lists no sha256 for " + archiveName(version, last.os, last.arch),
		}, {
			name: "archive does not match its sum",
			damage: func(t *testing.T, dir string) {
				appendByte(t, filepath.Join(dir, host))
			},
			want: "but helm-safe-upgrade_" + version + "_checksums.txt says",
		}, {
			name: "no checksums file",
			damage: func(t *testing.T, dir string) {
				os.Remove(filepath.Join(dir, "helm-safe-upgrade_"+version+"_checksums.txt"))
			},
			want: "want exactly one helm-safe-upgrade_VERSION_checksums.txt",
		}} {
			t.Run(tc.name, func(t *testing.T) {
				dir := copyDist(t, dist, version, platforms)
				tc.damage(t, dir)
				r := cmd{}.run(t, "bash", krewManifestArgs(c.Root, dir, platforms)...)
				if r.Code == 0 || !strings.Contains(r.Stderr, tc.want) {
					t.Errorf("want a failure saying %q\n%s", tc.want, r)
				}
			})
		}
	})

	t.Run("install hook downloads a release", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			tamper bool
			code   int
			want   string
		}{
			{name: "verified", want: "(release)"},
			{name: "tampered archive", tamper: true, code: 1, want: "sha256 mismatch for " + host},
		} {
			t.Run(tc.name, func(t *testing.T) {
				mirror := copyDist(t, dist, version, platforms)
				if tc.tamper {
					appendByte(t, filepath.Join(mirror, host))
				}
				pluginDir := t.TempDir()
				copyFile(t, filepath.Join(c.Root, "plugin.yaml"), filepath.Join(pluginDir, "plugin.yaml"), 0o644)
				hook := filepath.Join(pluginDir, "scripts", "install-binary.sh")
				copyFile(t, filepath.Join(c.Root, "scripts", "install-binary.sh"), hook, 0o755)
				// No go.mod in the plugin folder and no binary: the hook downloads.
				r := cmd{Env: withEnv(os.Environ(),
					"HELM_PLUGIN_DIR="+pluginDir,
					"SAFE_UPGRADE_VERSION="+version,
					"SAFE_UPGRADE_RELEASE_URL=file://"+mirror,
				)}.run(t, hook)
				if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) {
					t.Fatalf("install-binary.sh: want exit %d saying %q\n%s", tc.code, tc.want, r)
				}
				bin := filepath.Join(pluginDir, "bin", "helm-safe-upgrade")
				if tc.tamper {
					if _, err := os.Stat(bin); err == nil {
						t.Errorf("a tampered archive left %s behind", bin)
					}
					return
				}
				if v := (cmd{}).mustRun(t, bin, "--version"); !strings.Contains(v, version) {
					t.Errorf("installed binary says %q, want version %s", v, version)
				}
			})
		}
	})

	t.Run("helm plugin from an unpacked archive", func(t *testing.T) {
		dir := rel.unpack(t)
		env := helmHome(t, c)
		out := cmd{Env: env}.mustRun(t, c.Helm3, "plugin", "install", dir)
		if !strings.Contains(out, "Installed plugin: safe-upgrade") {
			t.Errorf("helm plugin install said:\n%s", out)
		}
		if v := (cmd{Env: env}).mustRun(t, c.Helm3, "safe-upgrade", "--version"); !strings.Contains(v, version) {
			t.Errorf("helm safe-upgrade --version = %q, want the archive's version %s", v, version)
		}
	})
}

// archiveName is goreleaser's archive name for a platform.
func archiveName(version, goos, goarch string) string {
	format := "tar.gz"
	if goos == "windows" {
		format = "zip"
	}
	return fmt.Sprintf("helm-safe-upgrade_%s_%s_%s.%s", version, goos, goarch, format)
}

// distVersion reads the version goreleaser built from dist/metadata.json.
func distVersion(t *testing.T, dist string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dist, "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(data, &meta); err != nil || meta.Version == "" {
		t.Fatalf("dist/metadata.json has no version (%v): %s", err, data)
	}
	return meta.Version
}

// readChecksums parses a "SHA256  NAME" checksums file.
func readChecksums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		sums[fields[1]] = fields[0]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

// archiveEntry is one regular file of an archive.
type archiveEntry struct {
	mode   fs.FileMode
	sha256 string
}

// checkArchive checks one release archive: listed with the right sum, and
// holding both entry names (identical regular files), plugin.yaml, the
// install hook (executable) and the README.
func checkArchive(t *testing.T, dist, name, goos string, sums map[string]string) {
	t.Helper()
	path := filepath.Join(dist, name)
	if got, want := fileSHA256(t, path), sums[name]; got != want {
		t.Fatalf("%s: sha256 %s, checksums file says %q", name, got, want)
	}
	entries := readArchive(t, path)
	ext := ""
	if goos == "windows" {
		ext = ".exe"
	}
	helmBin, kubectlBin := entries["bin/helm-safe-upgrade"+ext], entries["bin/kubectl-safe_upgrade"+ext]
	if helmBin == nil || kubectlBin == nil {
		t.Fatalf("%s lacks bin/helm-safe-upgrade%s or bin/kubectl-safe_upgrade%s; has %v", name, ext, ext, keys(entries))
	}
	if helmBin.sha256 != kubectlBin.sha256 {
		t.Errorf("%s: the two entry names are different binaries", name)
	}
	// The drop-in helm's dispatcher: a regular file (readArchive refuses
	// links, which krew cannot unpack) and a binary of its own.
	if shim := entries["bin/helm"+ext]; shim == nil {
		t.Errorf("%s lacks bin/helm%s, the drop-in helm; has %v", name, ext, keys(entries))
	} else if shim.sha256 == helmBin.sha256 {
		t.Errorf("%s: bin/helm%s is the tool itself, not the dispatcher (cmd/helm-shim)", name, ext)
	}
	for _, f := range []string{"plugin.yaml", "scripts/install-binary.sh", "README.md"} {
		if entries[f] == nil {
			t.Errorf("%s lacks %s; has %v", name, f, keys(entries))
		}
	}
	if goos != "windows" {
		for _, f := range []string{"bin/helm-safe-upgrade", "bin/kubectl-safe_upgrade", "bin/helm", "scripts/install-binary.sh"} {
			if e := entries[f]; e != nil && e.mode&0o111 == 0 {
				t.Errorf("%s: %s is not executable (mode %v)", name, f, e.mode)
			}
		}
	}
}

// readArchive lists the regular files of a .tar.gz or .zip with their mode
// and sha256; links and other types fail the test (Windows has no symlinks,
// and krew, which installs from these archives, cannot unpack one).
func readArchive(t *testing.T, path string) map[string]*archiveEntry {
	t.Helper()
	entries := map[string]*archiveEntry{}
	add := func(name string, mode fs.FileMode, r io.Reader) {
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			t.Fatalf("%s: reading %s: %v", path, name, err)
		}
		entries[strings.TrimPrefix(name, "./")] = &archiveEntry{mode: mode, sha256: hex.EncodeToString(h.Sum(nil))}
	}
	if strings.HasSuffix(path, ".zip") {
		z, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			if f.FileInfo().IsDir() {
				continue
			}
			if !f.Mode().IsRegular() {
				t.Fatalf("%s: %s is not a regular file (%v)", path, f.Name, f.Mode())
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			add(f.Name, f.Mode(), rc)
			rc.Close()
		}
		return entries
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			add(h.Name, h.FileInfo().Mode(), tr)
		default:
			t.Fatalf("%s: %s is not a regular file (type %c)", path, h.Name, h.Typeflag)
		}
	}
}

// checkKrewManifest checks the generated manifest names each built platform with
// its archive's URL and sum and the right binary.
func checkKrewManifest(t *testing.T, manifest, version string, sums map[string]string, platforms []platform) {
	t.Helper()
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version   string
			Platforms []struct {
				Selector struct{ MatchLabels map[string]string } `json:"selector"`
				URI      string                                  `json:"uri"`
				Sha256   string                                  `json:"sha256"`
				Bin      string                                  `json:"bin"`
			}
		}
	}
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatalf("the krew manifest is not YAML: %v\n%s", err, manifest)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "safe-upgrade" {
		t.Errorf("manifest header: %s %s %s", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	if m.Spec.Version != "v"+version {
		t.Errorf("spec.version = %q, want v%s", m.Spec.Version, version)
	}
	seen := map[string]bool{}
	for _, p := range m.Spec.Platforms {
		goos, goarch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		name := archiveName(version, goos, goarch)
		seen[goos+"/"+goarch] = true
		wantURI := "https://github.com/safe-upgrade/helm-safe-upgrade/releases/download/v" + version + "/" + name
		if p.URI != wantURI {
			t.Errorf("%s/%s: uri %q, want %q", goos, goarch, p.URI, wantURI)
		}
		if p.Sha256 != sums[name] {
			t.Errorf("%s/%s: sha256 %q, want %q", goos, goarch, p.Sha256, sums[name])
		}
		wantBin := "kubectl-safe_upgrade"
		if goos == "windows" {
			wantBin += ".exe"
		}
		if p.Bin != wantBin {
			t.Errorf("%s/%s: bin %q, want %q", goos, goarch, p.Bin, wantBin)
		}
	}
	for _, p := range platforms {
		if !seen[p.os+"/"+p.arch] {
			t.Errorf("the manifest has no platform %s/%s", p.os, p.arch)
		}
	}
	if len(m.Spec.Platforms) != len(platforms) {
		t.Errorf("the manifest has %d platforms, want the %d built", len(m.Spec.Platforms), len(platforms))
	}
}

// copyDist copies the archives and checksums of dist into a new folder.
func copyDist(t *testing.T, dist, version string, platforms []platform) string {
	t.Helper()
	dir := t.TempDir()
	names := []string{"helm-safe-upgrade_" + version + "_checksums.txt"}
	for _, p := range platforms {
		names = append(names, archiveName(version, p.os, p.arch))
	}
	for _, n := range names {
		copyFile(t, filepath.Join(dist, n), filepath.Join(dir, n), 0o644)
	}
	return dir
}

// copyFile copies src to dst (creating dst's folder) with the given mode.
func copyFile(t *testing.T, src, dst string, mode fs.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		t.Fatal(err)
	}
}

// editFile rewrites a file through edit.
func editFile(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendByte changes a file's content (and so its sha256) by one byte.
func appendByte(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
}

// dropLines removes the lines of s that contain sub.
func dropLines(s, sub string) string {
	var keep []string
	for _, line := range strings.SplitAfter(s, "\n") {
		if !strings.Contains(line, sub) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}

// fileSHA256 returns the hex sha256 of a file.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keys lists a map's keys, for failure messages.
func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// release is a goreleaser snapshot: its dist folder, version and platforms.
type release struct {
	dist, version string
	platforms     []platform
}

// releaseBuild is the snapshot that snapshot builds once per test binary.
var releaseBuild struct {
	once sync.Once
	rel  release
	err  error
}

// snapshot builds a goreleaser snapshot once per test binary — this
// machine's platform (make test), or every platform with AllPlatformsEnv=1
// (make release-check) — into .cache/ship-test/snapshot/dist (a fixed
// folder: goreleaser --clean replaces it, so runs do not pile up) and
// returns it. TestRelease checks it; the plugin and action tests install
// from its archive, as users do, rather than building the tool again.
func snapshot(t *testing.T) release {
	t.Helper()
	releaseBuild.once.Do(func() {
		// Set first: a t.Fatal below ends this function early, and the other
		// tests asking for the snapshot must not take a half-built one.
		releaseBuild.err = errors.New("the goreleaser snapshot failed to build: see the first test that asked for it")
		root := repoRoot(t)
		goreleaser := shipTool(t, "goreleaser")
		// goreleaser wants dist relative to the checkout.
		dist := filepath.Join(".cache", "ship-test", "snapshot", "dist")
		base, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		platforms := releasePlatforms()
		if len(platforms) != len(allPlatforms) {
			base = []byte(hostOnlyConfig(t, string(base)))
		}
		config := filepath.Join(t.TempDir(), "goreleaser.yaml")
		if err := os.WriteFile(config, append(base, []byte("\ndist: "+dist+"\n")...), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		cmd{}.mustRun(t, goreleaser, "release", "--snapshot", "--clean", "--config", config)
		t.Logf("goreleaser release --snapshot --clean: %v", time.Since(start).Round(time.Second))
		dist = filepath.Join(root, dist)
		releaseBuild.rel = release{dist: dist, version: distVersion(t, dist), platforms: platforms}
		releaseBuild.err = nil
	})
	if releaseBuild.err != nil {
		t.Fatal(releaseBuild.err)
	}
	return releaseBuild.rel
}

// hostArchive returns the path of the snapshot's archive for this machine.
func (r release) hostArchive(t *testing.T) string {
	t.Helper()
	path := filepath.Join(r.dist, archiveName(r.version, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no archive for this machine (%s/%s): %v", runtime.GOOS, runtime.GOARCH, err)
	}
	return path
}

// unpack unpacks this machine's archive into a new temporary folder and
// returns it: a ready Helm plugin whose bin/ holds the released binary.
func (r release) unpack(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd{}.mustRun(t, "tar", "-xzf", r.hostArchive(t), "-C", dir)
	return dir
}
