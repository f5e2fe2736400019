package bash

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// command is one program the script would run: a simple command of the
// script, or a command a launcher would start (xargs rm, sh -c '...').
type command struct {
	name word
	// base is the lower-case base name of a literal name: /bin/RM is rm.
	base string
	args []word
	// via names the launchers that start it, outermost first
	// ("xargs", "find -exec"); empty for a command the shell runs itself.
	via []string
	// stmt is the statement the command appears in; its redirects (and
	// those of enclosing statements) feed the command. For commands parsed
	// from strings it belongs to the inner script.
	stmt *syntax.Stmt
	// an is the analysis of the script the command belongs to.
	an *analysis
	// stdinNull is set for commands started by xargs, whose input is
	// /dev/null.
	stdinNull bool
	// runsNothing is set on a launcher that was given no command to run,
	// such as env alone or command -v.
	runsNothing bool
	// programFromStdin is set on a shell, interpreter or source command
	// that reads the program it runs from its standard input.
	programFromStdin bool
	// programFile is the file a shell or source command runs, when named
	// by a literal operand.
	programFile string
	// pathArgs are files the command reads or writes that are not among
	// its arguments, such as the files of sed's w and r commands; they are
	// checked against denyArgs like arguments.
	pathArgs []word
	// launched are the commands this one starts, directly or through the
	// scripts it runs.
	launched []*command
}

func newCommand(name word, args []word, stmt *syntax.Stmt, an *analysis, via []string) *command {
	c := &command{name: name, args: args, stmt: stmt, an: an, via: via}
	if name.literal && !name.glob && name.text != "" {
		c.base = strings.ToLower(path.Base(name.text))
	}
	return c
}

// display is the command as written, shortened for messages.
func (c *command) display() string {
	parts := []string{c.name.src}
	for _, a := range c.args {
		parts = append(parts, a.src)
	}
	s := strings.Join(parts, " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	if len(c.via) > 0 {
		s += " (started by " + strings.Join(c.via, " → ") + ")"
	}
	return s
}

// literalArgs returns the args' texts when all are exact, and false
// otherwise.
func literalArgs(args []word) ([]string, bool) {
	out := make([]string, len(args))
	for i, a := range args {
		if !a.exact() {
			return nil, false
		}
		out[i] = a.text
	}
	return out, true
}

// wordsFromNodes evaluates parsed words.
func wordsFromNodes(ws []*syntax.Word) []word {
	out := make([]word, len(ws))
	for i, w := range ws {
		out[i] = evalWord(w)
	}
	return out
}

// tree returns c and every command it launches, depth first.
func (c *command) tree() []*command {
	out := []*command{c}
	for _, l := range c.launched {
		out = append(out, l.tree()...)
	}
	return out
}
