package bash

import "testing"

// BenchmarkPolicyCheck is the shell policy's check of one command before it
// runs (parse, then every rule), in deny mode with the default config.
func BenchmarkPolicyCheck(b *testing.B) {
	p := testPolicy(b, Config{})
	for _, bc := range []struct{ name, cmd string }{
		{"simple", "ls -la src"},
		{"pipeline", "grep -rn TODO . | sort | head -20"},
		{"compound", `cd src && sort notes.txt > /tmp/out.txt 2>&1; echo "exit $?"`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if err := p.Check(bc.cmd); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = p.Check(bc.cmd)
			}
		})
	}
}
