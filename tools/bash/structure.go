package bash

import (
	"fmt"
	"maps"
	"slices"

	"mvdan.cc/sh/v3/syntax"
)

// Structural rules look at how commands are combined: a function that
// forks copies of itself, a download piped into a shell, a shell wired to a
// network tool. They run once every script of the check has been resolved,
// because they need to know what the other commands are.

func (s *session) structural() {
	for _, a := range s.analyses {
		if s.p.enabled(groupForkBomb) {
			a.checkForkBombs()
		}
		if s.p.enabled(groupReverseShell) {
			a.checkNetworkPipelines()
		}
	}
	for _, c := range s.commands {
		s.checkCodeSources(c)
	}
	s.checkScriptWide()
}

// isConsumer reports whether c runs code it is given: a shell, an
// interpreter, eval or source.
func isConsumer(c *command) bool {
	return isShell(c.base) || isInterpreter(c.base) || c.base == "eval" || c.base == "source" || c.base == "."
}

func firstMatching(cmds []*command, pred func(*command) bool) *command {
	for _, c := range cmds {
		if pred(c) {
			return c
		}
	}
	return nil
}

func isDownloader(c *command) bool { return downloaderNames[c.base] }
func isNetTool(c *command) bool    { return netToolNames[c.base] }
func isShellOrInterp(c *command) bool {
	return isShell(c.base) || isInterpreter(c.base)
}

// checkCodeSources refuses code that comes from the network: a consumer
// whose arguments, here-documents or standard input carry a downloader's
// output (sh -c "$(curl ...)", bash <(curl ...), curl ... | sh), or a shell
// whose input comes from a network tool.
func (s *session) checkCodeSources(c *command) {
	if !isConsumer(c) || c.an == nil {
		return
	}
	var nodes []syntax.Node
	for _, w := range c.args {
		if w.node != nil {
			nodes = append(nodes, w.node)
		}
	}
	if c.stmt != nil {
		for _, r := range c.stmt.Redirs {
			nodes = append(nodes, r)
		}
	}
	if s.p.enabled(groupDownloadExec) {
		for _, n := range nodes {
			if d := firstMatching(c.an.commandsIn(n), isDownloader); d != nil {
				s.add(groupDownloadExec, c.display(), fmt.Sprintf("runs code produced by %s (%s)", d.display(), groupWhy(groupDownloadExec)))
			}
		}
	}
	fromStdin := c.programFromStdin
	if isInterpreter(c.base) {
		fromStdin = inspectInterpreter(c).fromStdin
	}
	if !fromStdin {
		return
	}
	st := c.an.stdinOf(c)
	if st.kind != stdinPipe {
		return
	}
	var upstream []*command
	for _, n := range st.upstream {
		upstream = append(upstream, st.an.commandsIn(n)...)
	}
	if d := firstMatching(upstream, isDownloader); d != nil && s.p.enabled(groupDownloadExec) {
		s.add(groupDownloadExec, c.display(), fmt.Sprintf("reads its program from the output of %s (%s)", d.display(), groupWhy(groupDownloadExec)))
	}
	if n := firstMatching(upstream, isNetTool); n != nil && s.p.enabled(groupReverseShell) {
		s.add(groupReverseShell, c.display(), fmt.Sprintf("reads its program from the network tool %s (%s)", n.display(), groupWhy(groupReverseShell)))
	}
}

// checkNetworkPipelines refuses a pipeline that joins a network tool and a
// shell or interpreter: sh -i 2>&1 | nc host port, telnet ... | sh.
func (a *analysis) checkNetworkPipelines() {
	syntax.Walk(a.file, func(n syntax.Node) bool {
		b, ok := n.(*syntax.BinaryCmd)
		if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) {
			return true
		}
		cmds := a.commandsIn(b)
		net, sh := firstMatching(cmds, isNetTool), firstMatching(cmds, isShellOrInterp)
		if net != nil && sh != nil {
			a.s.add(groupReverseShell, printNode(b), fmt.Sprintf("a pipeline joins the network tool %s and %s (%s)", net.base, sh.base, groupWhy(groupReverseShell)))
		}
		return false // the whole pipeline has been looked at
	})
}

// checkForkBombs finds functions that call themselves, directly or through
// other functions, with at least one call that forks (in a pipeline, in the
// background, in a subshell or substitution): :(){ :|:& };: and friends.
func (a *analysis) checkForkBombs() {
	type edge struct {
		to    string
		forks bool
	}
	graph := map[string][]edge{}
	decls := map[string]*syntax.FuncDecl{}
	syntax.Walk(a.file, func(n syntax.Node) bool {
		fd, ok := n.(*syntax.FuncDecl)
		if !ok || fd.Name == nil || fd.Body == nil {
			return true
		}
		decls[fd.Name.Value] = fd
		syntax.Walk(fd.Body, func(m syntax.Node) bool {
			ce, ok := m.(*syntax.CallExpr)
			if !ok || len(ce.Args) == 0 {
				return true
			}
			if name := evalWord(ce.Args[0]); name.exact() {
				if a.funcNames[name.text] {
					graph[fd.Name.Value] = append(graph[fd.Name.Value], edge{name.text, a.forksBetween(ce, fd)})
				}
			}
			return true
		})
		return true
	})
	type state struct {
		fn     string
		forked bool
	}
	for _, start := range slices.Sorted(maps.Keys(decls)) {
		fd := decls[start]
		seen := map[state]bool{}
		queue := []state{{start, false}}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			for _, e := range graph[cur.fn] {
				next := state{e.to, cur.forked || e.forks}
				if next.fn == start && next.forked {
					a.s.add(groupForkBomb, "function "+start+" ("+printNode(fd.Name)+"(){...})", "it starts copies of itself that start copies of themselves ("+groupWhy(groupForkBomb)+")")
					queue = nil
					break
				}
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
	}
}

// forksBetween reports whether running ce from inside fd starts a new
// process that the caller does not wait for, or a subshell.
func (a *analysis) forksBetween(ce *syntax.CallExpr, fd *syntax.FuncDecl) bool {
	for n := a.parents[syntax.Node(ce)]; n != nil && n != syntax.Node(fd); n = a.parents[n] {
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Background || n.Coprocess || n.Disown {
				return true
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				return true
			}
		case *syntax.Subshell, *syntax.CmdSubst, *syntax.ProcSubst, *syntax.CoprocClause:
			return true
		}
	}
	return false
}

// checkScriptWide holds the rules that look at the whole command string.
func (s *session) checkScriptWide() {
	if s.p.enabled(groupReverseShell) {
		fifo := firstMatching(s.commands, func(c *command) bool {
			return c.base == "mkfifo" || c.base == "mknod" && anyArg(c.args, func(w word) bool { return w.text == "p" })
		})
		if net := firstMatching(s.commands, isNetTool); fifo != nil && net != nil {
			s.add(groupReverseShell, fifo.display()+" … "+net.display(), "a named pipe together with a network tool is the usual way to wire a shell to a socket ("+groupWhy(groupReverseShell)+")")
		}
	}
}
