package bash

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// commandOf builds a command from shell source of one simple command.
func commandOf(t *testing.T, src string) *command {
	t.Helper()
	f, err := parse(src, dialectBash)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	var c *command
	a := &analysis{s: &session{p: testPolicy(t, Config{}), seen: map[string]bool{}}, calls: map[*syntax.CallExpr]*command{}}
	for _, st := range f.Stmts {
		c = a.resolveStmtNoCheck(st)
	}
	return c
}

func TestFlagNormalisation(t *testing.T) {
	cases := []struct {
		pattern string
		cmd     string
		match   bool
	}{
		{"rm -rf", "rm -rf x", true},
		{"rm -rf", "rm -fr x", true},
		{"rm -rf", "rm -r -f x", true},
		{"rm -rf", "rm -f -r x", true},
		{"rm -rf", "rm -Rf x", true},
		{"rm -rf", "rm -R -f x", true},
		{"rm -rf", "rm --recursive --force x", true},
		{"rm -rf", "rm --force --recursive x", true},
		{"rm -rf", "rm --recursive -f x", true},
		{"rm -rf", "rm --recur --force x", true},
		{"rm -rf", "rm -vfri x", true},
		{"rm -rf", "rm x -r -f", true},
		{"rm -rf", "/bin/rm -rf x", true},
		{"rm -rf", "rm -r x", false},
		{"rm -rf", "rm -f x", false},
		{"rm -rf", "rm -- -rf", false},
		{"rm -rf", "rm -r -- -f", false},
		{"rm -rf", "rmdir -rf x", false},
		{"rm --recursive", "rm -R x", true},
		{"git push --force", "git push --force", true},
		{"git push --force", "git push -f", true},
		{"git push --force", "git push origin main --forc", true},
		{"git push --force", "git -C r push -f origin", true},
		{"git push --force", "git push --force-with-lease", false},
		{"git push --force", "git pull --force", false},
		{"git push --force", "git push", false},
		{"find -delete", "find . -name x -delete", true},
		{"find -delete", "find . -name x", false},
		{"find -delete", "find -- / -delete", true},
		{"mkfs*", "mkfs.ext4 /dev/x", true},
		{"mkfs*", "mkfs /dev/x", true},
		{"dd of=/dev/*", "dd if=/dev/zero of=/dev/sda bs=1M", true},
		{"dd of=/dev/*", "dd if=/dev/sda of=out.img", false},
		{"rm -r /", "rm -r //", true},
		{"rm -r /", "rm -r /.", true},
		{"rm -r /", "rm -r /*", true},
		{"rm -r /", "rm -r ./*", false},
		{"chmod -R /", "chmod -R 777 /", true},
		{"chmod -R /", "chmod -r /", false},
		{"nc -e", "nc -lvpe /bin/sh 4444", true},
		{"nc -e", "nc --exec /bin/sh x 1", true},
		{"systemctl reboot", "systemctl --no-block reboot", true},
		{"systemctl reboot", "systemctl status", false},
		{"curl --output", "curl -o x http://y", true},
		{"rm -rf", "rm --r --f x", true},
		{"go test -exec", "go test -exec=x ./...", true},
	}
	for _, tc := range cases {
		p, err := parsePattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := p.match(commandOf(t, tc.cmd))
		if got != tc.match {
			t.Errorf("pattern %q vs %q: match=%v, want %v", tc.pattern, tc.cmd, got, tc.match)
		}
	}
}

func TestUnknownArgumentsMakePatternsUnverifiable(t *testing.T) {
	cases := []struct {
		pattern string
		cmd     string
		refuse  bool
	}{
		{"rm -rf", "rm $F x", true},
		{"rm -rf", `rm "$F" x`, true},
		{"rm -rf", "rm -r${X} x", true},
		{"rm -rf", "rm * -r", true},
		{"rm -rf", "rm ./* -r", false},
		{"rm -rf", `rm -r ./"$F"`, false},
		{"rm -rf", `rm -r -- "$F"`, false},
		{"rm -rf", `rm -- "$F"`, false},
		{"rm -r /", `rm -r "$F"`, true},
		{"rm -r /", `rm "$F"`, true},
		{"rm -r /", `rm -f -- "$F"`, false},
		{"git push --force", "git $SUB -f", true},
		{"git push --force", "git push $OPT", true},
		{"git push --force", `git status "$X"`, true},
		{"git push --force", `git status ./"$X"`, false},
		{"git push --force", `git -- "$X"`, false},
		{"curl -o", "curl $URL", true},
	}
	for _, tc := range cases {
		p, _ := parsePattern(tc.pattern)
		matched, unv := p.match(commandOf(t, tc.cmd))
		if matched {
			t.Errorf("%q vs %q: matched, want unverifiable=%v", tc.pattern, tc.cmd, tc.refuse)
			continue
		}
		if (unv != nil) != tc.refuse {
			t.Errorf("%q vs %q: unverifiable=%v, want %v", tc.pattern, tc.cmd, unv != nil, tc.refuse)
		}
	}
}

func TestArgMatches(t *testing.T) {
	cases := []struct {
		pattern string
		arg     string
		match   bool
	}{
		{"/etc/shadow", "/etc/shadow", true},
		{"/etc/shadow", "/etc//shadow", true},
		{"/etc/shadow", "/etc/./shadow", true},
		{"/etc/shadow", "/etc/../etc/shadow", true},
		{"/etc/shadow", "/etc/sha*", true},
		{"/etc/shadow", "/etc/shado[w]", true},
		{"/etc/shadow", "--file=/etc/shadow", true},
		{"/etc/shadow", "if=/etc/shadow", true},
		{"/etc/shadow", "-f/etc/shadow", true},
		{"/etc/shadow", "/etc/passwd", false},
		{"/etc/shadow", "/etc/shadow.bak", false},
		{"/root/.ssh/*", "/root/.ssh/id_rsa", true},
		{"--no-verify", "--no-verify", true},
		{"--no-verify", "--no-ver", true},
		{"--no-verify", "-no-verify", true},
		{"--no-verify", "--no", true},
		{"--no-verify", "--", false},
		{"--no-verify", "--verify", false},
		{"-f", "-rf", true},
		{"-f", "--force", false},
	}
	for _, tc := range cases {
		w := evalWord(parseWord(t, tc.arg))
		if got := argMatches(tc.pattern, w); got != tc.match {
			t.Errorf("denyArgs %q vs %q: %v, want %v", tc.pattern, tc.arg, got, tc.match)
		}
	}
}

func TestParseOpts(t *testing.T) {
	spec := optSpec{shortArg: "uS", shortFlag: "i0", longArg: []string{"unset", "split-string"}, longFlag: []string{"ignore-environment", "null"}}
	cases := []struct {
		args    string
		rest    string
		wantErr bool
	}{
		{"-i ls -l", "ls -l", false},
		{"-iu HOME ls", "ls", false},
		{"-uHOME ls", "ls", false},
		{"--unset HOME ls", "ls", false},
		{"--unset=HOME ls", "ls", false},
		{"--uns HOME ls", "ls", false},
		{"--ignore ls", "ls", false},
		{"-- -i", "-i", false},
		{"-x ls", "", true},
		{"--frob ls", "", true},
		{"-u", "", true},
		{"$X ls", "", true},
		{`./"$X" ls`, `./"$X" ls`, false},
	}
	for _, tc := range cases {
		c := commandOf(t, "launcher "+tc.args)
		_, i, err := parseOpts(c.args, spec)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err=%v, wantErr %v", tc.args, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		var rest []string
		for _, w := range c.args[i:] {
			rest = append(rest, w.src)
		}
		if got := strings.Join(rest, " "); got != tc.rest {
			t.Errorf("%q: operands %q, want %q", tc.args, got, tc.rest)
		}
	}
}
