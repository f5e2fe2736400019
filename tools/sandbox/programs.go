package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// ProgramsOnPath returns the executable files in the directories of
// pathList (a PATH value) whose names keep accepts, as paths in those
// directories. Symlinks count as what they point to. A directory that is
// another one under a second name (/bin and /usr/bin where /bin links to
// it) is read once: Landlock rules attach to files, not names.
func ProgramsOnPath(pathList string, keep func(name string) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !keep(name) {
				continue
			}
			p := filepath.Join(dir, name)
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}
