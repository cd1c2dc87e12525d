package gitops

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
)

// followLink is where the link p (name, relative to the checkout) leads
// when that stays in the checkout whose real path is root. A link out of
// it, or one that cannot be followed, is the same error naming the link,
// so the error never tells whether a file outside exists. Argo CD's
// repo-server refuses a repository holding such a link too.
func followLink(root, p, name string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		if rel, relErr := filepath.Rel(root, real); relErr != nil || escapes(rel) {
			err = fs.ErrPermission
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s is a symbolic link leading outside the checkout, or a broken one (Argo CD refuses such links too)", name)
	}
	return real, nil
}

// relName is p, a path under the checkout, as its repository names it.
func (s *Side) relName(p string) string {
	rel, err := filepath.Rel(s.Root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// walkChart calls fn with each file of the chart directory dir (its path
// relative to dir, slash-separated, and the file to read) as Helm's loader
// walks it: links followed, links to directories too. Helm's loader
// follows any link, so each one must stay in the checkout (followLink); a
// link to a directory holding it is refused, as the loader would walk it
// forever, and so is a walk of more than FilesMax entries (links to
// directories can multiply them).
func (s *Side) walkChart(dir string, fn func(rel, file string) error) error {
	root, err := filepath.EvalSymlinks(s.Root)
	if err != nil {
		return err
	}
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	base := s.relName(dir)
	entries := 0
	var walk func(real, rel string, open []string) error
	walk = func(real, rel string, open []string) error {
		list, err := os.ReadDir(real)
		if err != nil {
			return err
		}
		for _, e := range list {
			if entries++; entries > FilesMax {
				return fmt.Errorf("%s: more than %d files", base, FilesMax)
			}
			p, r := filepath.Join(real, e.Name()), path.Join(rel, e.Name())
			if e.Type()&fs.ModeSymlink != 0 {
				if p, err = followLink(root, p, path.Join(base, r)); err != nil {
					return err
				}
			}
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			switch {
			case !fi.IsDir():
				err = fn(r, p)
			case slices.Contains(open, p):
				err = fmt.Errorf("%s is a symbolic link to a directory holding it: Helm's loader would follow it forever", path.Join(base, r))
			default:
				err = walk(p, r, append(open, p))
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	// A link to the chart directory or to one holding it loops.
	open := []string{top}
	for d := top; d != root && filepath.Dir(d) != d; {
		d = filepath.Dir(d)
		open = append(open, d)
	}
	return walk(top, "", open)
}
