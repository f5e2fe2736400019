package main

import (
	"regexp"
	"slices"
	"strings"
)

// A README transcript is a fenced block after a marker line
// `<!-- transcript: NAME -->`: lines starting with "$ " are commands (a
// command whose quotes are open goes on over the next lines), the lines
// after a command are what it prints, stdout and stderr as a terminal
// shows them. In what a command prints, as the README shows it:
//
//   - "..." inside a line stands for any text;
//   - a line that is only "..." stands for any number of lines;
//   - durations, run and thread ids, API keys, dates and the server's port
//     are compared normalised (what varies from run to run), and so are
//     what varies from machine to machine: the Go version and platform,
//     and the kernel sandbox `ruleagent version` reports;
//   - sub-agents started together ("↳ sub-agent" lines in a row) may be
//     listed in any order: parallel starts have none.

// A block in a list item is indented: its marker, fences and lines alike.
var transcriptMarker = regexp.MustCompile("(?m)^( *)<!-- transcript: ([a-z0-9-]+) -->\n *```\n((?s:.*?)) *```\n")

// dedent removes indent from each line of a block.
func dedent(block, indent string) string {
	if indent == "" {
		return block
	}
	lines := strings.SplitAfter(block, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(lines, "")
}

// indentLines adds indent to each line of a block.
func indentLines(block, indent string) string {
	if indent == "" {
		return block
	}
	lines := strings.SplitAfter(block, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = indent + l
		}
	}
	return strings.Join(lines, "")
}

// step is one command of a transcript and what it printed.
type step struct {
	command string   // without "$ ", its lines joined by "\n"
	output  []string // lines
}

func parseSteps(block string) []step {
	var steps []step
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			for openQuote(cmd) && i+1 < len(lines) {
				i++
				cmd += "\n" + lines[i]
			}
			steps = append(steps, step{command: cmd})
			continue
		}
		if len(steps) > 0 {
			steps[len(steps)-1].output = append(steps[len(steps)-1].output, l)
		}
	}
	return steps
}

// openQuote reports whether a shell command line ends inside quotes.
func openQuote(s string) bool {
	var q rune
	for _, r := range s {
		switch {
		case q == 0 && (r == '\'' || r == '"'):
			q = r
		case r == q:
			q = 0
		}
	}
	return q != 0
}

var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\((<1ms|\d+(\.\d+)?(ns|µs|ms|s|m|h)(\d+(\.\d+)?(ms|s))*)\)`), "(DURATION)"},
	{regexp.MustCompile(`\b(run|thread|call|chatcmpl|msg)-[0-9a-f]{8,}`), "$1-ID"},
	{regexp.MustCompile(`\brak_[0-9a-f]{16}_[A-Za-z0-9_-]+`), "rak_KEY"},
	{regexp.MustCompile(`\b[0-9a-f]{16}\b`), "ID16"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?Z?`), "DATETIME"},
	{regexp.MustCompile(`(127\.0\.0\.1|localhost):\d+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`\bgo1\.\d+(\.\d+)?(rc\d+)? [a-z0-9]+/[a-z0-9]+\)`), "GOVERSION OS/ARCH)"},
	{regexp.MustCompile(`^sandbox: .*`), "sandbox: SUMMARY"},
}

func normalise(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		for _, n := range normalisers {
			l = n.re.ReplaceAllString(l, n.with)
		}
		out[i] = strings.TrimRight(l, " ")
	}
	// Sub-agents started together have no order.
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && strings.HasPrefix(strings.TrimLeft(out[j], " "), "↳ sub-agent ") {
			j++
		}
		if j > i+1 {
			slices.Sort(out[i:j])
		}
		i = max(j, i+1)
	}
	return out
}

// matches reports whether what a command printed (got) is what the
// README shows (want), both normalised.
func matches(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for k := 0; k <= len(got); k++ {
			if matches(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && matches(want[1:], got[1:])
}

// lineMatches is one line, "..." standing for any text.
func lineMatches(want, got string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return want == got
	}
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	got = got[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(got, p)
		if i < 0 {
			return false
		}
		got = got[i+len(p):]
	}
	return strings.HasSuffix(got, last)
}
