package bash

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Programs in files. The policy cannot read a file before the command runs,
// so `sh build.sh` runs whatever build.sh holds. Two cases can still be seen
// within one command string:
//
//   - a file the command downloads and then runs (curl -o x.sh URL && sh
//     x.sh) is refused as download-and-execute;
//   - a file the command writes and then runs: if it was written from a
//     literal here-document (cat > x.sh <<'EOF' ... EOF; sh x.sh), its text
//     is checked like any script; otherwise (echo "$X" > x.sh, cp /bin/rm x)
//     it is refused.
//
// A file written by one call and run by a later one is not checked: the
// policy sees one command string at a time.

// producedFile is a file the command writes.
type producedFile struct {
	by *command
	// text is the file's content when it is known from a literal
	// here-document or here-string.
	text  string
	known bool
}

// checkFilePrograms applies the rules above. It runs before the structural
// pass, because checking a known script adds commands to the session.
func (s *session) checkFilePrograms() {
	downloaded := map[string]*command{}
	written := map[string]producedFile{}
	for _, c := range s.commands {
		if isDownloader(c) {
			for _, name := range downloadedFiles(c) {
				downloaded[name] = c
			}
		}
		for name, f := range writtenFiles(c) {
			written[name] = f
		}
	}
	for _, c := range append([]*command(nil), s.commands...) {
		for _, f := range executedFiles(c) {
			base := path.Base(f.path)
			if d := downloaded[base]; d != nil && s.p.enabled(groupDownloadExec) {
				s.add(groupDownloadExec, c.display(), fmt.Sprintf("runs %s, which %s downloads (%s)", f.path, d.display(), groupWhy(groupDownloadExec)))
			}
			w, ok := written[base]
			if !ok || f.interpreted {
				continue
			}
			if !w.known {
				s.add(ruleUnverifiable, c.display(), fmt.Sprintf("runs %s, which %s writes in the same command with content the policy cannot know", f.path, w.by.display()))
				continue
			}
			dialects := []dialect{dialectPOSIX, dialectBash}
			if d, ok := dialectsForShell(c.base); ok {
				dialects = d
			}
			c.an.launchScript(c, w.text, dialects, stdinSource{kind: stdinUnknown, desc: "its caller's input"}, c.an.depth+len(c.via))
		}
	}
}

// writtenFiles returns the files c writes, by base name: output redirect
// targets, and the operands of tee, cp, mv, ln, install and rsync.
func writtenFiles(c *command) map[string]producedFile {
	out := map[string]producedFile{}
	var content producedFile
	if (c.base == "cat" || c.base == "tee") && c.an != nil {
		if st := c.an.stdinOf(c); st.kind == stdinText && !anyArg(c.args, func(w word) bool { return c.base == "cat" && !strings.HasPrefix(w.text, "-") }) {
			content = producedFile{text: st.text, known: true}
		}
	}
	content.by = c
	switch c.base {
	case "tee":
		for _, w := range c.args {
			if w.exact() && !strings.HasPrefix(w.text, "-") {
				out[path.Base(w.text)] = content
			}
		}
	case "cp", "mv", "ln", "install", "rsync":
		for _, w := range c.args {
			if w.exact() && !strings.HasPrefix(w.text, "-") {
				out[path.Base(w.text)] = producedFile{by: c}
			}
		}
	}
	if c.stmt != nil && c.an != nil && len(c.via) == len(c.an.via) {
		for _, r := range c.stmt.Redirs {
			if (r.N == nil || r.N.Value == "1") && isOutputRedirect(r.Op) && r.Op != syntax.DplOut {
				if w := evalWord(r.Word); w.exact() {
					out[path.Base(w.text)] = content
				}
			}
		}
	}
	return out
}

// executedFile is a file c runs as a program.
type executedFile struct {
	path string
	// interpreted is set for the script of python, node and the like,
	// whose code the policy does not check anyway.
	interpreted bool
}

// executedFiles returns the files c runs: a command named by a path, the
// script of a shell or source, an interpreter's script.
func executedFiles(c *command) []executedFile {
	var out []executedFile
	if c.base != "" && strings.Contains(c.name.text, "/") {
		out = append(out, executedFile{path: c.name.text})
	}
	if c.programFile != "" {
		out = append(out, executedFile{path: c.programFile})
	}
	if isInterpreter(c.base) {
		if op := inspectInterpreter(c).operand; op != nil && op.exact() {
			out = append(out, executedFile{path: op.text, interpreted: true})
		}
	}
	return out
}

// downloadedFiles returns the base names of the files a downloader writes.
func downloadedFiles(c *command) []string {
	var out []string
	urls := func() {
		for _, w := range c.args {
			if w.exact() && strings.Contains(w.text, "://") {
				if b := path.Base(strings.SplitN(strings.SplitN(w.text, "?", 2)[0], "#", 2)[0]); b != "" && b != "/" && !strings.HasSuffix(w.text, "/") {
					out = append(out, b)
				} else {
					out = append(out, "index.html")
				}
			}
		}
	}
	flags := flagsOf(c.base, c.args, nil)
	switch c.base {
	case "curl":
		if v, ok := optionValue(c.args, "o"); ok && v.exact() {
			out = append(out, path.Base(v.text))
		}
		if v := longOptionValue(c.args, "--output"); v != "" {
			out = append(out, path.Base(v))
		}
		if flags["-O"] {
			urls()
		}
	case "wget", "wget2":
		v, ok := optionValue(c.args, "O")
		if lv := longOptionValue(c.args, "--output-document"); lv != "" {
			v, ok = literalWord(lv), true
		}
		switch {
		case ok && v.exact() && v.text != "-":
			out = append(out, path.Base(v.text))
		case !ok:
			urls()
		}
	default:
		urls()
	}
	if c.stmt != nil {
		for _, r := range c.stmt.Redirs {
			if (r.N == nil || r.N.Value == "1") && isOutputRedirect(r.Op) && r.Op != syntax.DplOut {
				if w := evalWord(r.Word); w.exact() {
					out = append(out, path.Base(w.text))
				}
			}
		}
	}
	return out
}

func longOptionValue(args []word, name string) string {
	for i, w := range args {
		if !w.exact() {
			continue
		}
		if v, ok := strings.CutPrefix(w.text, name+"="); ok {
			return v
		}
		if w.text == name && i+1 < len(args) && args[i+1].exact() {
			return args[i+1].text
		}
	}
	return ""
}
