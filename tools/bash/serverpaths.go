package bash

import (
	"os"
	"path"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// The server's own paths (its chains folder, its data directory; see
// tools.ServerPath) are the kernel's to keep: the sandbox grants the
// workspace around them, whatever a command does. The policy only
// explains early, for the commands it can read, so that the model learns
// the right way instead of a bare "Permission denied": a literal word
// that names a secret path, or a path the command writes (an output
// redirect, the files of rm, mv, touch, tee..., the target of cp, ln,
// install), is refused with rule "server_paths".

// setServerPaths tells the policy the server's paths.
func (p *Policy) setServerPaths(paths []tools.ServerPath) {
	p.serverPaths = nil
	for _, sp := range paths {
		p.serverPaths = append(p.serverPaths, sp)
		if real := workspace.RealPath(sp.Path); real != sp.Path {
			sp.Path = real
			p.serverPaths = append(p.serverPaths, sp)
		}
	}
}

// pathWriters are the commands whose operands are files they write or
// remove: all of them, or the last one (the target).
var pathWriters = map[string]string{
	"rm": "all", "rmdir": "all", "unlink": "all", "shred": "all", "touch": "all", "mkdir": "all", "tee": "all",
	"truncate": "all", "mv": "all", "mkfifo": "all", "mknod": "all",
	"cp": "last", "ln": "last", "install": "last", "rsync": "last",
}

// serverPathUses are the words of c that may name a server path.
func serverPathUses(c *command) []pathUse {
	var operands []word
	for _, w := range c.args {
		if w.literal && len(w.text) > 0 && w.text[0] != '-' {
			operands = append(operands, w)
		}
	}
	writes := pathWriters[c.base]
	out := make([]pathUse, 0, len(operands))
	for i, w := range operands {
		write := writes == "all" || (writes == "last" && i == len(operands)-1 && len(operands) > 1)
		out = append(out, pathUse{subject: c.display(), w: w, write: write})
	}
	return out
}

// checkServerPaths refuses the uses that name a server path, from any
// directory the script may be in. Words the policy cannot resolve (not
// literal, after a cd it cannot follow) are left to the kernel.
func (s *session) checkServerPaths() {
	if len(s.serverUses) == 0 {
		return
	}
	dirs, _ := s.workDirs()
	home := os.Getenv("HOME")
	for _, u := range s.serverUses {
		if !u.w.literal || u.w.glob {
			continue
		}
		for _, d := range dirs {
			abs := path.Clean(resolvePath(d, u.w.text, home))
			if sp, ok := tools.ServerPathOf(s.p.serverPaths, abs, u.write); ok {
				e := &tools.ServerPathError{Name: u.w.text, Owner: sp, Write: u.write}
				s.add(RuleServerPaths, u.subject, e.Reason())
				break
			}
		}
	}
}
