package bash

import (
	"errors"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// Regression cases for the holes an adversarial review found in the policy
// (issue 11, "hardening of what exists"). The effects are asserted by the
// suite in tools/adversarial; these check the decisions and their rules.

func TestInterpretersSetting(t *testing.T) {
	var off, on []policyCase
	for _, cmd := range interpreterCommands {
		off = append(off, policyCase{cmd, ruleInterpreters})
		on = append(on, policyCase{cmd, ""})
	}
	more := []string{
		"node -e 'require(\"child_process\").execSync(\"id\")'",
		"perl -e 'exec \"id\"'",
		"ruby -e 'system(\"id\")'",
		"awk 'BEGIN { system(\"id\") }'",
		"awk 'BEGIN { print \"id\" | \"sh\" }'",
		"awk 'BEGIN { \"id\" | getline x; print x }'",
		"gawk -f prog.awk data",
		"awk -e '@load \"filefuncs\"'",
		`awk "$PROG" file`,
		"make -C src",
		"npm run build",
		"npx cowsay hi",
		"go run ./cmd/x",
		"go build -toolexec=/tmp/x ./...",
		"go vet -vettool=./x ./...",
		"git -c alias.x='!id' x",
		"git -c core.pager='id' log",
		"git -c core.sshCommand='id' fetch",
		"git -c filter.a.smudge=id checkout .",
		"git config alias.st '!id'",
		"git config core.pager id",
		"vim -c '!id' -c q",
		"vim +'!id' f",
		"emacs --batch --eval '(shell-command \"id\")'",
		"ed f <<< '!id'",
		"GIT_PAGER=id git log",
		"export EDITOR=id",
		"PYTHONPATH=. true",
	}
	for _, cmd := range more {
		off = append(off, policyCase{cmd, ruleInterpreters})
	}
	runPolicyCases(t, Config{}, off)
	runPolicyCases(t, Config{Interpreters: interpretersOn}, on)
	// Ordinary uses of awk and git are not interpreters.
	runPolicyCases(t, Config{}, []policyCase{
		{"awk '{print $1}' f", ""},
		{"awk -F: '$3 > 1000 {print $1}' /etc/passwd", ""},
		{"awk '/a|b/ {n++} END {print n}' f", ""},
		{"git status && git log --oneline -3", ""},
		{"git -c user.name=x commit -m y", ""},
		{"python3 --version", ""},
		{"go build ./... && go vet ./...", ""},
		{"vim --version", ""},
	})
	// In allow mode the allow list names the interpreters that may run,
	// but code smuggled through git's options is still refused.
	runPolicyCases(t, Config{Mode: modeAllow, Allow: []string{"python3", "git", "awk"}}, []policyCase{
		{"python3 -c 'print(1)'", ""},
		{"git -c core.pager=id log", ruleInterpreters},
		{"awk 'BEGIN{system(\"id\")}'", ruleInterpreters},
		{"git log", ""},
	})
}

func TestFunctionsShadowOnlyWhenCertainlyDefined(t *testing.T) {
	cfg := Config{Mode: modeAllow, Allow: []string{"ls", "echo", "true", "false", "unset"}}
	runPolicyCases(t, cfg, []policyCase{
		// Definitions that are certain before the call.
		{"f(){ ls; }; f", ""},
		{"f(){ ls; }\nf", ""},
		{"f(){ ls; }; (f)", ""},
		{"f(){ ls; }; echo $(f)", ""},
		{"f(){ ls; }; if true; then f; fi", ""},
		// Definitions that never run, run elsewhere or are undone.
		{"if false; then id(){ :; }; fi; id", ruleAllow},
		{"false && id(){ :; }; id", ruleAllow},
		{"(id(){ :; }); id", ruleAllow},
		{"echo $(id(){ :; }); id", ruleAllow},
		{"id(){ :; } & id", ruleAllow},
		{"id(){ :; } | true; id", ruleAllow},
		{"id(){ :; }; unset -f id; id", ruleAllow},
		{"id(){ :; }; unset id; id", ruleAllow},
		{"id(){ :; }; unset -f \"$N\"; id", ruleAllow},
		{"while false; do id(){ :; }; done; id", ruleAllow},
		{"g(){ id(){ :; }; }; id", ruleAllow},
		{"id; id(){ :; }", ruleAllow},
		{"case x in y) id(){ :; };; esac; id", ruleAllow},
	})
}

func TestExecCapableProgramsAreUnwrappedOrRefused(t *testing.T) {
	runPolicyCases(t, Config{}, []policyCase{
		// Tracers, schedulers and credential changers run their operands.
		{"strace -f -o /dev/null shred f", groupDestructive},
		{"strace -o '|shred f' true", groupDestructive},
		{"strace -E LD_PRELOAD=./x.so ls", ruleEnvInjection},
		{"strace -p 1", groupPrivilege},
		{"ltrace -o /dev/null shred f", groupDestructive},
		{"chrt -f 10 shred f", groupDestructive},
		{"chrt 0 shred f", groupDestructive},
		{"prlimit --nofile=1024 shred f", groupDestructive},
		{"prlimit -n1024 shred f", groupDestructive},
		{"setpriv --no-new-privs shred f", groupDestructive},
		{"setpriv --reuid=0 ls", groupPrivilege},
		{"setarch x86_64 -R shred f", groupDestructive},
		{"linux64 shred f", groupDestructive},
		{"numactl --interleave=all shred f", groupDestructive},
		{"valgrind --tool=none shred f", groupDestructive},
		{"/lib64/ld-linux-x86-64.so.2 /usr/bin/shred f", groupDestructive},
		{"ld.so --preload ./x.so /bin/ls", ruleEnvInjection},
		{"eatmydata shred f", groupDestructive},
		{"strace --frobnicate shred f", ruleLauncher},
		{"fakeroot ls", ruleLauncher},
		{"parallel ::: 'shred f'", ruleLauncher},
		{"gdb -batch -ex 'shell id'", ruleLauncher},
		// Options that run commands.
		{"sed -n '1e shred f' x", ruleLauncher},
		{"sed 's/x/shred f/e' x", ruleLauncher},
		{"sed -e p -e '1e id' x", ruleLauncher},
		{"sed -f script.sed x", ruleLauncher},
		{`sed "$S" x`, ruleLauncher},
		{"tar -I 'shred f' -cf x.tar .", groupDestructive},
		{"tar --use-compress-program='shred f' -cf x.tar .", groupDestructive},
		{"tar --use-comp='shred f' -cf x.tar .", groupDestructive},
		{"tar -cf x.tar --checkpoint=1 --checkpoint-action=exec='shred f' .", groupDestructive},
		{"tar -cf x.tar --to-command='shred f' .", groupDestructive},
		{"tar cIf 'shred f' x.tar .", ruleLauncher},
		{"zip -T -TT 'shred f' x.zip y", groupDestructive},
		{"zip --unzip-command='shred f' -T x.zip y", groupDestructive},
		{"ssh -o ProxyCommand='shred f' host", groupDestructive},
		{"ssh -oProxyCommand='shred f' host", groupDestructive},
		{"ssh -o 'LocalCommand shred f' -o PermitLocalCommand=yes host", groupDestructive},
		{"ssh -F ./cfg host", ruleLauncher},
		{"scp -S 'shred f' a host:b", groupDestructive},
		{"rsync -e 'shred f' a host:b", groupDestructive},
		{"man -P 'shred f' ls", groupDestructive},
		{"sort --compress-program='shred f' x", groupDestructive},
		{"git rebase -x 'shred f' HEAD~2", groupDestructive},
		{"git submodule foreach 'shred f'", groupDestructive},
		{"git bisect run shred f", groupDestructive},
		{"git clone --upload-pack='shred f' host:r", groupDestructive},
		{"git clone 'ext::sh -c id' r", ruleLauncher},
	})
	runPolicyCases(t, Config{}, []policyCase{
		{"sed -n '1,5p' x", ""},
		{"sed -i.bak 's/a/b/g' x", ""},
		{"sed -ie 's/a/b/g' x", ""},
		{"sed --sandbox \"$S\" x", ""},
		{"sed 's/e/E/g; /x/d' x", ""},
		{"tar -czf x.tgz src", ""},
		{"tar -I zstd -cf x.tar.zst src", ""},
		{"ssh -o ConnectTimeout=5 host", ""},
		{"strace -f -o trace.txt ls", ""},
		{"chrt -p 1", ""},
	})
}

func TestRecursiveChangesStayInTheWorkspace(t *testing.T) {
	runPolicyCases(t, Config{}, []policyCase{
		{"rm -r build", ""},
		{"rm -r ./build/*.o", ""},
		{"rm -r " + testWorkspace + "/build", ""},
		{"mv a.txt b.txt", ""},
		{"mv -t dir a b", ""},
		{"chmod -R u+w src", ""},
		{"chown -R 1000 src", ""},
		{"rm -r /home/someone/project", groupDestructive},
		{"rm -r ../other", groupDestructive},
		{"rm -R /etc/ssl", groupDestructive},
		{"rm --recursive /var/lib/x", groupDestructive},
		{"rm -r ~/.ssh", groupDestructive},
		{"cd / && rm -r etc", groupDestructive},
		{"cd .. && rm -r ws2", groupDestructive},
		{"mv secrets.txt /tmp/x", groupDestructive},
		{"mv /etc/passwd .", groupDestructive},
		{"mv -t /etc a", groupDestructive},
		{"chmod -R 777 /usr/local", groupDestructive},
		{"chown -R nobody /srv", groupDestructive},
		{"chgrp -R users ~", groupDestructive},
		{`rm -r "$DIR"`, groupDestructive},
		{`cd "$D"; rm -r x`, groupDestructive},
		{"rm -r " + testWorkspace, ""},
		{"rm -r /", groupDestructive},
	})
	// Switching the group off switches the rule off.
	runPolicyCases(t, Config{AllowGroups: []string{groupDestructive}}, []policyCase{{"rm -r /etc/ssl", ""}})
}

func TestDenyArgsFollowPaths(t *testing.T) {
	cfg := Config{DenyArgs: []string{"/etc/shadow", "/srv/secret", "config/secrets.yml"}}
	runPolicyCases(t, cfg, []policyCase{
		{"cd /etc && cat shadow", ruleDenyArgs},
		{"cd /etc; cat ./shadow", ruleDenyArgs},
		{"cd / && cat etc/shadow", ruleDenyArgs},
		{"cd /etc && cat sha*", ruleDenyArgs},
		{"pushd /etc && cat shadow", ruleDenyArgs},
		{"env -C /etc cat shadow", ruleDenyArgs},
		{"cat /srv/secret/k.txt", ruleDenyArgs},
		{"cat /srv/secret/../secret/a/b", ruleDenyArgs},
		{"cd /srv && cat secret/k", ruleDenyArgs},
		{"cat config/secrets.yml", ruleDenyArgs},
		{"cd config && cat secrets.yml", ruleDenyArgs},
		{"sed -n 'w /etc/shadow' x", ruleDenyArgs},
		{"sed 's/a/b/w /srv/secret/out' x", ruleDenyArgs},
		{"sed '1r /etc/shadow' x", ruleDenyArgs},
		{`cd "$D" && cat x`, ruleDenyArgs},
		{"CDPATH=/etc cd . && cat shadow", ruleDenyArgs},
		{"cat /srv/secretary.txt", ""},
		{"cd /tmp && cat shadow.txt", ""},
		{"sed -n 'w out.txt' x", ""},
	})
}

func TestRefusalListsItsFindings(t *testing.T) {
	p := testPolicy(t, Config{})
	var r *Refusal
	if err := p.Check("python3 -c 'print(1)'"); !errors.As(err, &r) || !r.OnlyRules(RuleInterpreters) || !errors.Is(err, tools.ErrPolicyDenied) {
		t.Fatalf("an interpreter alone: want a Refusal of only %q, got %v", RuleInterpreters, err)
	}
	if err := p.Check("python3 -c 'print(1)'; shred f"); !errors.As(err, &r) || r.OnlyRules(RuleInterpreters) || len(r.Findings) != 2 {
		t.Fatalf("an interpreter and a destructive command: want two findings of different rules, got %v", err)
	}
	var te *tools.Error
	if err := p.Check("shred f"); !errors.As(err, &te) || te.Kind != tools.ErrPolicyDenied {
		t.Fatalf("a Refusal must also be a *tools.Error: %v", err)
	}
}
