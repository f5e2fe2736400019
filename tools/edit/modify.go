package edit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/textfile"
)

// snippetContext is how many unchanged lines are shown around a change, and
// snippetMax the most lines a result shows, so the model can check its edit
// without reading the file again.
const (
	snippetContext = 2
	snippetMax     = 20
)

// change is what an operation did to a file's text.
type change struct {
	text    string // the new content
	summary string // "replaced 1 occurrence", "deleted lines 3-4", ...
}

// modify runs one of the editing operations: read the file, compute the new
// content, back up the old, write the new atomically. The per-path lock
// makes the read-modify-write, and the choice of backup version, one step
// for every call through this tool.
func (t *Tool) modify(session string, a Args) (string, error) {
	rel, _, err := filetool.StatFile(t.ws, a.Path)
	if err != nil {
		if tools.KindOf(err) == tools.ErrFileNotFound {
			return "", tools.Errorf(tools.ErrFileNotFound, "%s does not exist; edit changes existing files (use the write tool to create one)", a.Path)
		}
		return "", err
	}
	unlock := t.locks.Lock(rel)
	defer unlock()

	_, data, err := t.ws.ReadFile(rel, t.cfg.MaxFileSize)
	if err != nil {
		return "", err
	}
	if textfile.IsBinary(data) {
		return "", tools.Errorf(tools.ErrInvalidArgs, "%s looks like a binary file; edit changes text files only", rel)
	}
	old := string(data)
	var c change
	switch a.Operation {
	case opLine:
		c, err = replaceLines(textfile.Split(old), a)
	case opDelete:
		c, err = deleteLines(textfile.Split(old), a)
	case opInsert:
		c, err = insertLines(old, a)
	case opSearch:
		c, err = searchReplace(old, a)
	}
	if err != nil {
		return "", explain(err, rel)
	}
	if c.text == old {
		return "", tools.Errorf(tools.ErrInvalidArgs, "this edit would leave %s unchanged; nothing was written", rel)
	}
	if int64(len(c.text)) > t.cfg.MaxFileSize {
		return "", tools.Errorf(tools.ErrInvalidArgs, "%s would grow to %s, over the %s limit", rel, filetool.Size(int64(len(c.text))), filetool.Size(t.cfg.MaxFileSize))
	}
	version, err := t.backups.save(session, rel, data)
	if err != nil {
		return "", tools.Wrap(tools.ErrExecutionFailed, err, "%s was not changed, because its backup failed", rel)
	}
	if _, err := t.ws.WriteFileAtomic(rel, []byte(c.text), 0o644); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s (backup v%d)", c.summary, rel, version)
	writeSnippet(&b, textfile.Split(old), textfile.Split(c.text))
	return b.String(), nil
}

// explain names the file in an operation's error, which is computed from
// the text alone.
func explain(err error, rel string) error {
	var te *tools.Error
	if errors.As(err, &te) {
		return &tools.Error{Kind: te.Kind, Msg: rel + ": " + te.Msg, Err: te.Err}
	}
	return err
}

// writeSnippet shows the changed region of the new text with a little
// context, found by trimming the lines both versions share at either end.
func writeSnippet(b *strings.Builder, old, new textfile.Text) {
	prefix := 0
	for prefix < old.Len() && prefix < new.Len() && old.Lines[prefix].Text == new.Lines[prefix].Text {
		prefix++
	}
	suffix := 0
	for suffix < old.Len()-prefix && suffix < new.Len()-prefix &&
		old.Lines[old.Len()-1-suffix].Text == new.Lines[new.Len()-1-suffix].Text {
		suffix++
	}
	from := max(prefix-snippetContext, 0)
	to := min(new.Len()-suffix+snippetContext, new.Len())
	if to <= from {
		b.WriteString("; the file is now empty")
		return
	}
	cut := to-from > snippetMax
	if cut {
		to = from + snippetMax
	}
	fmt.Fprintf(b, "; lines %d-%d now read:\n", from+1, to)
	lines := make([]string, 0, to-from)
	for _, l := range new.Lines[from:to] {
		lines = append(lines, textfile.Clip(l.Text, textfile.MaxLineBytes))
	}
	textfile.WriteNumbered(b, from+1, lines)
	if cut {
		b.WriteString("…\n")
	}
}
