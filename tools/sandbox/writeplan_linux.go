package sandbox

import (
	"path/filepath"
	"slices"
	"sort"
)

// The server's own paths (Spec.Protected, Spec.Secret) must stay
// unwritable, and the secret ones unreadable, whatever trees a tool may
// write: a workspace of "." holds the chains folder the server deploys
// from and its data directory. Landlock grants hierarchies, and a right
// on a directory covers everything beneath it, so a writable tree that
// holds such a path is granted entry by entry around it, as the read-only
// trees are around withheld files (see readPlan): every entry of the
// tree's directory gets read and write rights of its own, except the
// server path, which gets read rights (protected) or none (secret), and
// the directories on the way to it, which may only be listed. Commands
// therefore cannot create, remove or rename entries in those directories
// (the workspace's top level, when it holds the chains folder), only
// inside their other entries; and an entry added to them later (by the
// file tools) is writable from the next plan on, which is made again when
// one of them changes.

// addWritable adds to the plan the writable trees of spec that hold, or
// lie inside, one of its server paths, and records them in p.carved so
// that the ruleset does not grant them whole.
func (p *readPlan) addWritable(spec *Spec) {
	if len(spec.Protected)+len(spec.Secret) == 0 {
		return
	}
	protected, secret := realPaths(spec.Protected), realPaths(spec.Secret)
	around := sortedUnique(append(slices.Clone(protected), secret...))
	rightsOf := func(x string) uint64 {
		switch {
		case insideAny(x, secret):
			return 0
		case insideAny(x, protected):
			return accessRead
		}
		return accessRead | accessWrite
	}
	if p.carved == nil {
		p.carved = map[string]bool{}
	}
	for _, tree := range append([]string{spec.Workspace}, spec.Write...) {
		real, err := filepath.EvalSymlinks(tree)
		if err != nil {
			continue // a missing tree: granted, or refused, as before
		}
		under := inside(around, real)
		a := rightsOf(real)
		if len(under) == 0 && a == accessRead|accessWrite {
			continue // holds no server path: granted whole
		}
		p.carved[tree] = true
		if a == 0 {
			continue
		}
		// Within a protected tree only the secret paths matter.
		if a != accessRead|accessWrite {
			under = slices.DeleteFunc(slices.Clone(under), func(x string) bool { return !insideAny(x, secret) })
		}
		p.carve(real, a, under, rightsOf)
	}
	p.openFDs()
}

// realPaths resolves the symlinks of each path's longest existing part.
func realPaths(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, x := range paths {
		x = filepath.Clean(x)
		rest := ""
		for cur := x; ; cur = filepath.Dir(cur) {
			if real, err := filepath.EvalSymlinks(cur); err == nil {
				x = filepath.Join(real, rest)
				break
			}
			if filepath.Dir(cur) == cur {
				break
			}
			rest = filepath.Join(filepath.Base(cur), rest)
		}
		out = append(out, x)
	}
	sort.Strings(out)
	return slices.Compact(out)
}
