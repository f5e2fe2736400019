package bash

import (
	"errors"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

func testPolicy(t testing.TB, cfg Config) *Policy {
	t.Helper()
	base := defaultConfig
	base.Mode = cfg.Mode
	if base.Mode == "" {
		base.Mode = modeDeny
	}
	base.Allow, base.Deny, base.DenyArgs, base.AllowGroups = cfg.Allow, cfg.Deny, cfg.DenyArgs, cfg.AllowGroups
	if cfg.Interpreters != "" {
		base.Interpreters = cfg.Interpreters
	}
	if cfg.ShellPath != "" {
		base.ShellPath = cfg.ShellPath
	}
	s, err := base.validate()
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	p := newPolicy(s)
	p.setWorkspace(testWorkspace)
	return p
}

// testWorkspace is the workspace policy tests check commands in; it need
// not exist.
const testWorkspace = "/srv/ws"

// policyCase is one command and the rule expected to refuse it ("" when it
// must be allowed).
type policyCase struct {
	cmd  string
	rule string
}

func runPolicyCases(t *testing.T, cfg Config, cases []policyCase) {
	t.Helper()
	p := testPolicy(t, cfg)
	for _, tc := range cases {
		err := p.Check(tc.cmd)
		if tc.rule == "" {
			if err != nil {
				t.Errorf("%q: want allowed, got %v", tc.cmd, err)
			}
			continue
		}
		if !errors.Is(err, tools.ErrPolicyDenied) {
			t.Errorf("%q: want refusal by rule %q, got %v", tc.cmd, tc.rule, err)
			continue
		}
		if !strings.Contains(err.Error(), `rule "`+tc.rule+`"`) {
			t.Errorf("%q: want rule %q named in:\n%v", tc.cmd, tc.rule, err)
		}
	}
}

func TestDenyModeAllowsOrdinaryCommands(t *testing.T) {
	runPolicyCases(t, Config{}, []policyCase{
		{"ls -la | grep foo > out.txt 2>&1", ""},
		{`for f in *.go; do gofmt -l "$f"; done`, ""},
		{`export PATH="$PATH:/usr/local/go/bin"`, ""},
		{"rm -f build/out.o", ""},
		{"rm -r build", ""},
		{"rm ./*.o", ""},
		{`rm -- "$f"`, ""},
		{`git commit -m "rm -rf cleanup"`, ""},
		{`find . -name "*.go" -type f | xargs grep -n TODO`, ""},
		{"curl -s https://example.com | jq .", ""},
		{"cat <<'EOF'\nhello $x\nEOF", ""},
		{"sh -c 'echo hi && ls'", ""},
		{"sh script.sh", ""},
		{"echo hi > ./\"$OUT\"", ""},
		{"nohup sleep 1 &", ""},
		{"ps -eo pid,user,args", ""},
		{"n=$(wc -l < f); echo $((n+1))", ""},
		{"echo {a,b}", ""},
		{"[ -f go.mod ] && echo yes", ""},
		{"env GOOS=linux go build ./...", ""},
		{"xargs -0 -n1 echo < list", ""},
		{"find . -name '*.tmp' -print", ""},
		{"git push origin main", ""},
		{"cat > x.sh <<'EOF'\necho hi\nEOF\nsh x.sh", ""},
		{"git rm -rf --cached build", ""},
		{"man rm", ""},
		{"kill -9 1234", ""},
		{"kill -1 1234", ""},
		{"set -e; set -o pipefail", ""},
		{"sh -c 'echo -m'", ""},
	})
}

// interpreterCommands run code the policy cannot read; they run only when
// the interpreters setting is on.
var interpreterCommands = []string{
	"go test ./... && git status",
	"cd src && make build",
	"curl -s https://example.com/a.json | python3 -m json.tool",
	"python3 -c 'print(1+1)'",
	"timeout 5 go test ./...",
	"cat > x.py <<'EOF'\nprint(1)\nEOF\npython3 x.py",
}

func TestLiteralNames(t *testing.T) {
	cases := []policyCase{
		{"$(printf rm) -rf /", ruleLiteralName},
		{"a=rm; $a -rf /", ruleLiteralName},
		{"`echo rm` x", ruleLiteralName},
		{"{rm,-rf,/}", ruleLiteralName},
		{"/bin/r? -rf x", ruleLiteralName},
		{"$'\\x72m' -rf x", ruleLiteralName},
		{"\"$CMD\"", ruleLiteralName},
		{"=rm -rf x", ruleLiteralName},
		{"'' -rf x", ruleLiteralName},
		{"find . -exec {} \\;", ruleLiteralName},
		{"xargs -I{} {} x", ruleLiteralName},
	}
	runPolicyCases(t, Config{}, cases)
	runPolicyCases(t, Config{Mode: modeAllow, Allow: []string{"rm", "printf", "echo", "find", "xargs"}}, cases)
}

func TestQuotingAndPathsDoNotHideNames(t *testing.T) {
	runPolicyCases(t, Config{}, []policyCase{
		{"'rm' -rf x", groupDestructive},
		{`"r""m" -rf x`, groupDestructive},
		{`r\m -rf x`, groupDestructive},
		{"r\\\nm -rf x", groupDestructive},
		{`\rm -rf x`, groupDestructive},
		{"/bin/rm -rf x", groupDestructive},
		{`"/usr/bin/../bin/rm" -rf x`, groupDestructive},
		{"RM -rf x", groupDestructive},
	})
}

func TestEveryPlaceACommandCanHide(t *testing.T) {
	runPolicyCases(t, Config{}, []policyCase{
		{"echo x; shred f", groupDestructive},
		{"echo x && shred f", groupDestructive},
		{"false || shred f", groupDestructive},
		{"echo x & shred f", groupDestructive},
		{"echo x\nshred f", groupDestructive},
		{"echo x | shred f", groupDestructive},
		{"(shred f)", groupDestructive},
		{"{ shred f; }", groupDestructive},
		{"f() { shred x; }", groupDestructive},
		{"if true; then shred f; fi", groupDestructive},
		{"if shred f; then :; fi", groupDestructive},
		{"while shred f; do :; done", groupDestructive},
		{"for i in 1; do shred f; done", groupDestructive},
		{"case x in x) shred f;; esac", groupDestructive},
		{"echo $(shred f)", groupDestructive},
		{"echo `shred f`", groupDestructive},
		{`echo "$(shred f)"`, groupDestructive},
		{"cat <(shred f)", groupDestructive},
		{"echo x > >(shred f)", groupDestructive},
		{"cat <<EOF\n$(shred f)\nEOF", groupDestructive},
		{"cat <<< \"$(shred f)\"", groupDestructive},
		{"echo $(( $(shred f) ))", groupDestructive},
		{"X=$(shred f)", groupDestructive},
		{"X=$(shred f) ls", groupDestructive},
		{"export X=$(shred f)", groupDestructive},
		{"echo ${X:-$(shred f)}", groupDestructive},
		{"ls > $(shred f)", groupDestructive},
		{"! shred f", groupDestructive},
		{"time shred f", groupDestructive},
		{"[[ $(shred f) ]]", groupDestructive},
		{"echo $(echo $(echo $(shred f)))", groupDestructive},
	})
}

func TestLaunchersAreUnwrapped(t *testing.T) {
	runPolicyCases(t, Config{}, []policyCase{
		{"eval 'shred f'", groupDestructive},
		{"eval shred f", groupDestructive},
		{"sh -c 'shred f'", groupDestructive},
		{"bash -ec 'shred f'", groupDestructive},
		{"dash -x -c 'shred f'", groupDestructive},
		{"bash -o pipefail -c 'shred f'", groupDestructive},
		{"zsh -c 'shred f'", groupDestructive},
		{"ksh -c 'shred f'", groupDestructive},
		{"sh -c 'sh -c \"sh -c shred\"'", groupDestructive},
		{"env shred f", groupDestructive},
		{"env -i PATH=/bin shred f", groupDestructive},
		{"env -u HOME -C /tmp shred f", groupDestructive},
		{"env -S 'shred f'", groupDestructive},
		{"/usr/bin/env shred f", groupDestructive},
		{"xargs shred", groupDestructive},
		{"xargs -0 -n 1 shred", groupDestructive},
		{"find . -exec shred {} +", groupDestructive},
		{"find . -name x -execdir shred {} \\;", groupDestructive},
		{"find . -ok shred {} ;", groupDestructive},
		{"nohup shred f", groupDestructive},
		{"timeout -s KILL 5 shred f", groupDestructive},
		{"nice -n 5 shred f", groupDestructive},
		{"nice -5 shred f", groupDestructive},
		{"ionice -c3 shred f", groupDestructive},
		{"stdbuf -oL shred f", groupDestructive},
		{"exec shred f", groupDestructive},
		{"command shred f", groupDestructive},
		{"builtin eval 'shred f'", groupDestructive},
		{"/usr/bin/time -f %e shred f", groupDestructive},
		{"busybox shred f", groupDestructive},
		{"busybox sh -c 'shred f'", groupDestructive},
		{"trap 'shred f' EXIT", groupDestructive},
		{"watch -n 1 shred f", groupDestructive},
		{"watch -x shred f", groupDestructive},
		{"flock /tmp/l shred f", groupDestructive},
		{"flock /tmp/l -c 'shred f'", groupDestructive},
		{"chroot / shred f", groupDestructive},
		{"taskset 1 shred f", groupDestructive},
		{"script -qc 'shred f' /dev/null", groupDestructive},
		{"sh <<'EOF'\nshred f\nEOF", groupDestructive},
		{"sh <<< 'shred f'", groupDestructive},
		{"bash -s <<EOF\nshred f\nEOF", groupDestructive},
		{". /dev/stdin <<< 'shred f'", groupDestructive},
		{"sudo -u root shred f", groupDestructive},
	})
}

func TestLaunchersThatCannotBeChecked(t *testing.T) {
	runPolicyCases(t, Config{}, []policyCase{
		{`sh -c "$SCRIPT"`, ruleLauncher},
		{`eval "$X"`, ruleLauncher},
		{"env --frobnicate ls", ruleLauncher},
		{`env "$X" ls`, ruleLauncher},
		{"xargs --frobnicate ls", ruleLauncher},
		{`find "$dir" -name x`, ruleLauncher},
		{"fish -c 'ls'", ruleLauncher},
		{"sh -c 'if'", ruleLauncher},
		{`trap "$X" EXIT`, ruleLauncher},
		{"echo 'shred x' | xargs -I{} sh -c '{}'", ruleLauncher},
		{"echo 'shred x' | sh", ruleUnverifiable},
		{"cat script | bash -s", ruleUnverifiable},
		{"bash <(echo 'shred x')", ruleUnverifiable},
		{"source <(echo 'shred x')", ruleUnverifiable},
		{"sh /dev/fd/3 3<x", ruleUnverifiable},
		{"sh <<EOF\n$X\nEOF", ruleUnverifiable},
		{"f() { sh; }; echo x | f", ruleUnverifiable},
		{"cat x | source /dev/stdin", ruleUnverifiable},
		{"echo 'shred x' > x.sh; sh x.sh", ruleUnverifiable},
		{"printf 'shred x' | tee run.sh; bash ./run.sh", ruleUnverifiable},
		{"cp /usr/bin/shred ./x; ./x f", ruleUnverifiable},
		{"bash --rcfile <(echo 'shred x') -i", ruleUnverifiable},
		{"echo \"$X\" > x.sh; sh < x.sh", ruleUnverifiable},
		{"cat > x.sh <<'EOF'\nshred f\nEOF\nsh x.sh", groupDestructive},
		{"cat > x.sh <<'EOF'\nshred f\nEOF\nchmod +x x.sh; ./x.sh", groupDestructive},
	})
}

func TestShellStateAndEnvironmentInjection(t *testing.T) {
	cases := []policyCase{
		{"alias ls='shred x'; ls", ruleShellState},
		{"hash -p /bin/shred ls", ruleShellState},
		{"enable -f ./x.so x", ruleShellState},
		{"BASH_CMDS[ls]=/usr/bin/shred; ls x", ruleShellState},
		{"shopt -s expand_aliases\nBASH_ALIASES[ls]='shred x'\nls", ruleShellState},
		{"declare -A BASH_CMDS=([ls]=/usr/bin/shred)", ruleShellState},
		{"LD_PRELOAD=./evil.so ls", ruleEnvInjection},
		{"export LD_PRELOAD=/tmp/x.so", ruleEnvInjection},
		{"export LD_LIBRARY_PATH", ruleEnvInjection},
		{"BASH_ENV=/tmp/x sh -c true", ruleEnvInjection},
		{"ENV=/tmp/x sh -i", ruleEnvInjection},
		{"declare PROMPT_COMMAND=id", ruleEnvInjection},
		{"env 'BASH_FUNC_ls%%=() { id; }' bash -c ls", ruleEnvInjection},
		{"env DYLD_INSERT_LIBRARIES=x ls", ruleEnvInjection},
		{`export "$NAME=x"`, ruleEnvInjection},
		{"PS4='$(id)' bash -xc ls", ruleEnvInjection},
	}
	runPolicyCases(t, Config{}, cases)
	runPolicyCases(t, Config{Mode: modeAllow, Allow: []string{"ls", "export", "declare", "env", "bash", "sh", "alias", "hash", "enable"}}, cases)
}

func TestAllowMode(t *testing.T) {
	runPolicyCases(t, Config{Mode: modeAllow, Allow: []string{"ls", "grep", "cd"}}, []policyCase{
		{"ls -la", ""},
		{"ls | grep x", ""},
		{"cd src && ls", ""},
		{"f(){ ls; }; f", ""},
		{"ls; id", ruleAllow},
		{"ls $(id)", ruleAllow},
		{"ls `id`", ruleAllow},
		{"ls <(id)", ruleAllow},
		{"ls | sh", ruleAllow},
		{"nice ls", ruleAllow},
		{"env ls", ruleAllow},
		{"xargs ls", ruleAllow},
		{"./ls", ruleAllow},
		{"/bin/ls", ruleAllow},
		{"LS", ruleAllow},
		{"f(){ id; }; f", ruleAllow},
		{"g; g(){ ls; }", ruleAllow},
		{"PATH=. ls", ruleEnvInjection},
		{"export PATH=/tmp", ruleEnvInjection},
		{":(){ :|:& };:", groupForkBomb},
		{"ls -la; rm -rf x", ruleAllow},
	})
}

func TestDialectsDisagreeingIsCaught(t *testing.T) {
	// dash runs ((cmd)) as two subshells; bash reads it as arithmetic.
	runPolicyCases(t, Config{}, []policyCase{
		{"((shutdown))", groupPower},
		{"((shred f))", groupDestructive},
	})
	p := testPolicy(t, Config{})
	for _, cmd := range []string{"ls &>/dev/null", "a=(1 2)", "if then fi"} {
		if err := p.Check(cmd); !errors.Is(err, tools.ErrInvalidArgs) {
			t.Errorf("%q: want ErrInvalidArgs from the POSIX parse, got %v", cmd, err)
		}
	}
	pb := testPolicy(t, Config{ShellPath: "/bin/bash"})
	if err := pb.Check("ls &>/dev/null"); err != nil {
		t.Errorf("bash shell: &> should parse, got %v", err)
	}
}

func TestCheckRejectsMalformedInput(t *testing.T) {
	p := testPolicy(t, Config{})
	for _, cmd := range []string{"", "   ", "echo \x00", strings.Repeat("a", maxCommandBytes+1), "echo 'unterminated"} {
		if err := p.Check(cmd); !errors.Is(err, tools.ErrInvalidArgs) {
			t.Errorf("%.20q: want ErrInvalidArgs, got %v", cmd, err)
		}
	}
}

func TestNestingIsBounded(t *testing.T) {
	cmd := strings.Repeat("eval ", maxDepth+2) + "shred f"
	err := testPolicy(t, Config{}).Check(cmd)
	if !errors.Is(err, tools.ErrPolicyDenied) || !strings.Contains(err.Error(), ruleLimits) {
		t.Fatalf("deep nesting: want a %s refusal, got %v", ruleLimits, err)
	}
}

func TestRefusalNamesCommandAndRule(t *testing.T) {
	err := testPolicy(t, Config{}).Check("echo ok; rm -rf /")
	var te *tools.Error
	if !errors.As(err, &te) || te.Kind != tools.ErrPolicyDenied {
		t.Fatalf("want *tools.Error of kind ErrPolicyDenied, got %#v", err)
	}
	for _, want := range []string{"rm -rf /", `rule "destructive"`, "the destructive group", "nothing was run"} {
		if !strings.Contains(te.Msg, want) {
			t.Errorf("message lacks %q:\n%s", want, te.Msg)
		}
	}
	// The pattern that matched is not quoted: it would tell an attacker
	// which spelling to avoid.
	if strings.Contains(te.Msg, `"rm -rf"`) || strings.Contains(te.Msg, "pattern \"") {
		t.Errorf("the refusal quotes a deny pattern:\n%s", te.Msg)
	}
}
