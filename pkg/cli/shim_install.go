package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim"
)

// ShimInstallOptions is `helm safe-upgrade shim install DIR`: it puts the
// drop-in helm into DIR, a link named helm to the dispatcher (cmd/helm-shim)
// that the release archive and the plugin install put beside this binary as
// bin/helm.
type ShimInstallOptions struct {
	Streams iostreams.Streams
	// Dir is where the shim goes; Self is this binary, links resolved.
	Dir  string
	Self string
	// Dispatcher is the drop-in helm beside Self (set by Complete).
	Dispatcher string
	// Getenv reads SAFE_UPGRADE_HELM and PATH, to say whether a real helm
	// will be found.
	Getenv func(string) string
}

// newShimCommand is `shim`, the drop-in helm's commands: `shim install DIR`.
func newShimCommand(f *Factory, runF runFunc) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "shim",
		Short:         "The drop-in helm: shim install DIR",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("shim expects a command: shim install DIR; see --help")
		},
	}
	cmd.AddCommand(newShimInstallCommand(f, runF))
	return cmd
}

// newShimInstallCommand is `shim install DIR`.
func newShimInstallCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &ShimInstallOptions{Streams: f.Streams, Getenv: os.Getenv}
	return verbCommand(&cobra.Command{
		Use:   "install DIR",
		Short: "Put the drop-in helm (a helm that gates upgrades) into DIR",
		Long: `Put the drop-in helm into DIR: a link named helm to the small dispatcher
beside this binary (its bin/helm), which hands helm upgrade and helm diff
upgrade to this binary beside it and every other command to the real helm. With DIR
first on PATH (or helmfile's helmBinary pointing at DIR/helm), helm upgrade
goes through the safe-upgrade gate and every other command runs the real
helm: the next helm on PATH, or ` + shim.HelmEnv + `. See docs/orchestrators.md.`,
		Args: cobra.ExactArgs(1),
	}, o, runF)
}

// Complete resolves DIR, this binary and the dispatcher beside it.
func (o *ShimInstallOptions) Complete(args []string) error {
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	o.Dir = dir
	if o.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this binary: %w", err)
		}
		if o.Self, err = filepath.EvalSymlinks(self); err != nil {
			return fmt.Errorf("finding this binary: %w", err)
		}
	}
	o.Dispatcher = filepath.Join(filepath.Dir(o.Self), exeName(shim.Name))
	return nil
}

// exeName is name as an executable's file name on this system.
func exeName(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// Validate refuses a DIR that is a file, and a binary without the
// dispatcher beside it.
func (o *ShimInstallOptions) Validate() error {
	if fi, err := os.Stat(o.Dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("shim install %s: not a directory", o.Dir)
	}
	if fi, err := os.Stat(o.Dispatcher); err != nil || fi.IsDir() {
		return fmt.Errorf("shim install: no drop-in helm beside this binary: %s is missing (the release archive and the plugin's install hook put it there; from a checkout: go build -o %s ./cmd/helm-shim)", o.Dispatcher, o.Dispatcher)
	}
	return nil
}

// Run links DIR/helm to the dispatcher. Where links are not allowed it
// copies the dispatcher and this binary into DIR, so the dispatcher finds
// the tool beside it (shim.ToolBeside). An existing DIR/helm that is the
// dispatcher is kept; a link to this binary (the shim before the
// dispatcher) is replaced; any other helm is left alone and refused.
func (o *ShimInstallOptions) Run(context.Context) error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fmt.Errorf("shim install: %w", err)
	}
	target := filepath.Join(o.Dir, exeName(shim.Name))
	if same, err := sameFile(target, o.Dispatcher); err == nil && same {
		fmt.Fprintf(o.Streams.Out, "%s is already the safe-upgrade shim\n", target)
		return o.checkRealHelm()
	}
	switch same, err := sameFile(target, o.Self); {
	case err == nil && same:
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("shim install: replacing %s, a link to %s, by the dispatcher: %w", target, o.Self, err)
		}
	case err == nil:
		return fmt.Errorf("shim install: %s exists and is not the safe-upgrade shim (%s); remove it or choose another DIR", target, o.Dispatcher)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("shim install: %w", err)
	}
	if err := os.Symlink(o.Dispatcher, target); err != nil {
		tool := filepath.Join(o.Dir, exeName(shim.ToolName))
		if err := copyFile(o.Dispatcher, target); err != nil {
			return fmt.Errorf("shim install: copying %s to %s: %w", o.Dispatcher, target, err)
		}
		if err := copyFile(o.Self, tool); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("shim install: copying %s to %s: %w", o.Self, tool, err)
		}
	}
	fmt.Fprintf(o.Streams.Out, "installed %s -> %s\nput %s first on PATH (export PATH=%q:\"$PATH\"), or point helmfile's helmBinary at %s\n", target, o.Dispatcher, o.Dir, o.Dir, target)
	return o.checkRealHelm()
}

// checkRealHelm warns when the shim would find no real helm with DIR first
// on PATH.
func (o *ShimInstallOptions) checkRealHelm() error {
	path := o.Dir + string(os.PathListSeparator) + o.Getenv("PATH")
	helm, err := shim.Lookup{Self: o.Dispatcher, Explicit: o.Getenv(shim.HelmEnv), Path: path}.RealHelm()
	if err != nil {
		fmt.Fprintf(o.Streams.ErrOut, "WARNING: %v\n", err)
		return nil
	}
	fmt.Fprintf(o.Streams.Out, "the real helm: %s\n", helm)
	return nil
}

// sameFile reports whether path (links resolved) is the file self.
func sameFile(path, self string) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	selfInfo, err := os.Stat(self)
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, selfInfo), nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
