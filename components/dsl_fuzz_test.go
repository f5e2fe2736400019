package components

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// validateChain runs Validate on one chain file, with nothing else
// deployed.
func validateChain(path string, dsl []byte) []Problem {
	return Validate([]ChainFile{{Path: path, DSL: dsl}}, nil, Options{})
}

// FuzzChainDSL: whatever a chain file holds, validating it never panics,
// decides the same way every time, names the file and says what is wrong
// in every problem, and finds an error in a file that is not JSON.
func FuzzChainDSL(f *testing.F) {
	for _, dir := range []string{"../chains", "../server/testdata/mcp"} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	for _, s := range []string{
		`{"ruleChain":{"id":"a"},"metadata":{"nodes":[{"id":"x","type":"nope"}]}}`,
		`{"ruleChain":{"id":"a"},"metadata":{"nodes":[{"id":"agent","type":"ai/agent","configuration":{"tools":[{"type":"builtin","name":"bash","config":{"mode":"allow","allow":["ls"]}},{"type":"rulechain","name":"b","targetId":"b"},{"type":"mcp","server":"self"}]}}],"connections":[{"fromId":"agent","toId":"missing","type":"Success"}]}}`,
		`{"ruleChain":{"id":"a"},"metadata":{"firstNodeIndex":3,"nodes":[{"id":"f","type":"flow","configuration":{"targetId":"a"}}]}}`,
		`{"ruleChain":{},"metadata":{"nodes":[{"type":"jsTransform","configuration":{"jsScript":"return msg"}}]}}`,
		`[]`,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, dsl []byte) {
		const path = "fuzz.json"
		ps := validateChain(path, dsl)
		if again := validateChain(path, dsl); !reflect.DeepEqual(ps, again) {
			t.Fatalf("two verdicts:\n%v\n%v", ps, again)
		}
		for _, p := range ps {
			if p.File != path || p.Msg == "" {
				t.Fatalf("a problem without its file or message: %+v", p)
			}
		}
		if errs, _ := Split(ps); !json.Valid(dsl) && len(errs) == 0 {
			t.Fatalf("a file that is not JSON passed: %q", dsl)
		}
	})
}
