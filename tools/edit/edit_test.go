package edit

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

const goFile = "package main\n\nfunc main() {\n\tprintln(\"a\")\n\tprintln(\"b\")\n}\n"

func TestEditOperations(t *testing.T) {
	cases := []struct {
		name   string
		file   string // content of f.txt before
		args   string // path f.txt is added
		kind   error
		result string // substring of the result or the error
		after  string // content afterwards; "" with kind set means unchanged
	}{
		// line
		{name: "line one", file: "a\nb\nc\n", args: `"operation":"line","line_from":2,"content":"B"`,
			result: "replaced line 2 with 1 line in f.txt (backup v1); lines 1-3 now read:\n1\ta\n2\tB\n3\tc\n", after: "a\nB\nc\n"},
		{name: "line range to more lines, trailing newline in content ignored", file: "a\nb\nc\nd\n", args: `"operation":"line","line_from":2,"line_to":3,"content":"x\ny\nz\n"`,
			result: "replaced lines 2-3 with 3 lines", after: "a\nx\ny\nz\nd\n"},
		{name: "line keeps CRLF", file: "a\r\nb\r\n", args: `"operation":"line","line_from":1,"content":"A"`, after: "A\r\nb\r\n"},
		{name: "line keeps a missing final newline", file: "a\nb", args: `"operation":"line","line_from":2,"content":"B"`, after: "a\nB"},
		{name: "line with an empty line", file: "a\nb\n", args: `"operation":"line","line_from":1,"content":""`, after: "\nb\n"},
		{name: "line past the end", file: "a\n", args: `"operation":"line","line_from":2,"content":"x"`, kind: tools.ErrInvalidArgs, result: "f.txt: line_from 2 is past the end; the file has 1 lines"},
		{name: "line_to past the end", file: "a\nb\n", args: `"operation":"line","line_from":1,"line_to":3,"content":"x"`, kind: tools.ErrInvalidArgs, result: "line_to 3"},
		{name: "line_to before line_from", file: "a\nb\n", args: `"operation":"line","line_from":2,"line_to":1,"content":"x"`, kind: tools.ErrInvalidArgs},
		{name: "line without line_from", file: "a\n", args: `"operation":"line","content":"x"`, kind: tools.ErrInvalidArgs, result: "line_from is required"},
		{name: "line without content", file: "a\n", args: `"operation":"line","line_from":1`, kind: tools.ErrInvalidArgs, result: "content is required"},
		{name: "line in an empty file", file: "", args: `"operation":"line","line_from":1,"content":"x"`, kind: tools.ErrInvalidArgs, result: "empty"},
		{name: "line to the same text", file: "a\nb\n", args: `"operation":"line","line_from":1,"content":"a"`, kind: tools.ErrInvalidArgs, result: "unchanged"},

		// search
		{name: "search unique", file: goFile, args: `"operation":"search","search":"println(\"a\")","replace":"println(\"A\")"`,
			result: "replaced 1 occurrence in f.txt (backup v1)", after: strings.Replace(goFile, `"a"`, `"A"`, 1)},
		{name: "search multi-line", file: goFile, args: `"operation":"search","search":"\tprintln(\"a\")\n\tprintln(\"b\")\n","replace":"\tprintln(\"ab\")\n"`,
			after: "package main\n\nfunc main() {\n\tprintln(\"ab\")\n}\n"},
		{name: "search not unique", file: goFile, args: `"operation":"search","search":"println","replace":"print"`,
			kind: tools.ErrInvalidArgs, result: "occurs 2 times (lines 4, 5)"},
		{name: "search global", file: goFile, args: `"operation":"search","search":"println","replace":"print","global":true`,
			result: "replaced 2 occurrences", after: strings.ReplaceAll(goFile, "println", "print")},
		{name: "search regex with groups", file: goFile, args: `"operation":"search","search":"println\\(\"(\\w)\"\\)","replace":"log(\"$1!\")","use_regex":true,"global":true`,
			after: strings.NewReplacer(`println("a")`, `log("a!")`, `println("b")`, `log("b!")`).Replace(goFile)},
		{name: "search regex not unique", file: goFile, args: `"operation":"search","search":"print\\w+","replace":"x","use_regex":true`, kind: tools.ErrInvalidArgs, result: "regex occurs 2 times"},
		{name: "search regex too long", file: goFile, args: `"operation":"search","search":"` + strings.Repeat("a", 1001) + `","replace":"x","use_regex":true`,
			kind: tools.ErrInvalidArgs, result: "1001 characters long; the limit is 1000"},
		{name: "search regex invalid", file: goFile, args: `"operation":"search","search":"(","replace":"x","use_regex":true`, kind: tools.ErrInvalidArgs, result: "RE2"},
		{name: "search no match shows closest lines", file: goFile, args: `"operation":"search","search":"fmt.Println(\"a\")","replace":"x"`,
			kind: tools.ErrInvalidArgs, result: "not found. Closest lines:\n4\t\tprintln(\"a\")"},
		{name: "search no match because of whitespace", file: goFile, args: `"operation":"search","search":"    println(\"b\")","replace":"x"`,
			kind: tools.ErrInvalidArgs, result: "matches if whitespace is ignored"},
		{name: "search regex no match", file: goFile, args: `"operation":"search","search":"^\\s+printf","replace":"x","use_regex":true`,
			kind: tools.ErrInvalidArgs, result: "regex was not found"},
		{name: "search identical", file: goFile, args: `"operation":"search","search":"main","replace":"main"`, kind: tools.ErrInvalidArgs, result: "identical"},
		{name: "search regex no-op", file: goFile, args: `"operation":"search","search":"(main)\\(","replace":"${1}(","use_regex":true`, kind: tools.ErrInvalidArgs, result: "unchanged"},
		{name: "search without replace", file: goFile, args: `"operation":"search","search":"main"`, kind: tools.ErrInvalidArgs, result: "replace is required"},
		{name: "search without search", file: goFile, args: `"operation":"search","replace":"x"`, kind: tools.ErrInvalidArgs, result: "search is required"},
		{name: "search deletes", file: "keep drop keep\n", args: `"operation":"search","search":" drop","replace":""`, after: "keep keep\n"},
		{name: "search in CRLF with LF text", file: "a\r\nb\r\nc\r\n", args: `"operation":"search","search":"a\nb","replace":"x\ny\nz"`, after: "x\r\ny\r\nz\r\nc\r\n"},
		{name: "search in a mixed file is literal", file: "a\r\nb\nc\n", args: `"operation":"search","search":"b\nc","replace":"B\nC"`, after: "a\r\nB\nC\n"},

		// insert
		{name: "insert after text", file: goFile, args: `"operation":"insert","after":"func main() {","content":"\tinit()"`,
			result: "inserted 1 line after line 3", after: "package main\n\nfunc main() {\n\tinit()\n\tprintln(\"a\")\n\tprintln(\"b\")\n}\n"},
		{name: "insert before text", file: goFile, args: `"operation":"insert","before":"func main","content":"// main runs.\n"`,
			result: "before line 3", after: "package main\n\n// main runs.\nfunc main() {\n\tprintln(\"a\")\n\tprintln(\"b\")\n}\n"},
		{name: "insert after a multi-line text ending in a newline", file: "a\nb\nc\n", args: `"operation":"insert","after":"a\nb\n","content":"x"`, after: "a\nb\nx\nc\n"},
		{name: "insert at the top", file: "a\n", args: `"operation":"insert","after_line":0,"content":"top\nsecond"`, result: "inserted 2 lines after line 0", after: "top\nsecond\na\n"},
		{name: "insert at the end of an unterminated file", file: "a\nb", args: `"operation":"insert","after_line":2,"content":"c"`, after: "a\nb\nc"},
		{name: "insert before_line past the last", file: "a\n", args: `"operation":"insert","before_line":2,"content":"z"`, after: "a\nz\n"},
		{name: "insert into an empty file", file: "", args: `"operation":"insert","after_line":0,"content":"first"`, after: "first\n"},
		{name: "insert with a regex anchor", file: goFile, args: `"operation":"insert","after":"^\\}$","use_regex":true,"content":"// end"`, after: goFile + "// end\n"},
		{name: "insert keeps CRLF", file: "a\r\nb\r\n", args: `"operation":"insert","before":"b","content":"x"`, after: "a\r\nx\r\nb\r\n"},
		{name: "insert with two anchors", file: "a\n", args: `"operation":"insert","after":"a","after_line":1,"content":"x"`, kind: tools.ErrInvalidArgs, result: "exactly one of"},
		{name: "insert without anchor", file: "a\n", args: `"operation":"insert","content":"x"`, kind: tools.ErrInvalidArgs, result: "exactly one of"},
		{name: "insert anchor not unique", file: goFile, args: `"operation":"insert","after":"println","content":"x"`, kind: tools.ErrInvalidArgs, result: "after text occurs 2 times"},
		{name: "insert anchor missing", file: goFile, args: `"operation":"insert","before":"func helper","content":"x"`, kind: tools.ErrInvalidArgs, result: "before text was not found"},
		{name: "insert line out of range", file: "a\n", args: `"operation":"insert","after_line":5,"content":"x"`, kind: tools.ErrInvalidArgs, result: "between 0 (the top) and 1"},
		{name: "insert without content", file: "a\n", args: `"operation":"insert","after_line":0`, kind: tools.ErrInvalidArgs},

		// delete
		{name: "delete one", file: "a\nb\nc\n", args: `"operation":"delete","line_from":2`, result: "deleted line 2", after: "a\nc\n"},
		{name: "delete range", file: "a\nb\nc\nd\n", args: `"operation":"delete","line_from":2,"line_to":3`, result: "deleted lines 2-3", after: "a\nd\n"},
		{name: "delete the unterminated last line", file: "a\nb", args: `"operation":"delete","line_from":2`, after: "a"},
		{name: "delete everything", file: "a\nb\n", args: `"operation":"delete","line_from":1,"line_to":2`, result: "the file is now empty", after: ""},
		{name: "delete out of range", file: "a\n", args: `"operation":"delete","line_from":1,"line_to":2`, kind: tools.ErrInvalidArgs},
		{name: "delete without lines", file: "a\n", args: `"operation":"delete"`, kind: tools.ErrInvalidArgs},

		// common
		{name: "binary", file: "\x00\x01\x02", args: `"operation":"delete","line_from":1`, kind: tools.ErrInvalidArgs, result: "binary"},
		{name: "unknown operation", file: "a\n", args: `"operation":"replace"`, kind: tools.ErrInvalidArgs, result: "unknown operation"},
		{name: "no operation", file: "a\n", args: `"line_from":1`, kind: tools.ErrInvalidArgs, result: "operation is required"},
		{name: "unknown argument", file: "a\n", args: `"operation":"line","line":1,"content":"x"`, kind: tools.ErrInvalidArgs, result: `unknown argument "line"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.txt")
			put(t, p, c.file)
			tl := newTool(t, dir, "")
			do(t, tl, in("s1"), `{"path":"f.txt",`+c.args+`}`, c.kind, c.result)
			want := c.after
			if c.kind != nil {
				want = c.file
			}
			if got := get(t, p); got != want {
				t.Fatalf("content = %q, want %q", got, want)
			}
			assertNoTempFiles(t, dir)
		})
	}
}

func TestEditFileErrors(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "d", "x"), "x\n")
	put(t, filepath.Join(dir, "big"), strings.Repeat("a\n", 20))
	put(t, filepath.Join(dir, "small"), "a\n")
	put(t, filepath.Join(dir, "secret", "k"), "k\n")
	tl := newTool(t, dir, `{"maxFileSize":30,"deny":["secret"]}`)
	s := in("s")
	do(t, tl, s, `{"operation":"delete","path":"missing.txt","line_from":1}`, tools.ErrFileNotFound, "use the write tool")
	do(t, tl, s, `{"operation":"delete","path":"d","line_from":1}`, tools.ErrInvalidArgs, "directory")
	do(t, tl, s, `{"operation":"delete","path":"big","line_from":1}`, tools.ErrInvalidArgs, "over the limit")
	do(t, tl, s, `{"operation":"line","path":"small","line_from":1,"content":"`+strings.Repeat("b", 40)+`"}`, tools.ErrInvalidArgs, "would grow")
	do(t, tl, s, `{"operation":"delete","path":"secret/k","line_from":1}`, tools.ErrPolicyDenied)
	do(t, tl, s, `{"operation":"delete","path":"../x","line_from":1}`, tools.ErrInvalidPath)
	do(t, tl, s, `{"operation":"delete","line_from":1}`, tools.ErrInvalidArgs, "path is required")
	if get(t, filepath.Join(dir, "small")) != "a\n" {
		t.Fatal("a refused edit changed the file")
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	for config, field := range map[string]string{
		`{"maxHistory":0}`:     "maxHistory",
		`{"maxHistory":1001}`:  "maxHistory",
		`{"maxFileSize":-5}`:   "maxFileSize",
		`{"maxHistory":"ten"}`: "maxHistory",
		`{"history":3}`:        "history",
		`{"deny":[".."]}`:      "deny[0]",
	} {
		var m map[string]any
		_ = json.Unmarshal([]byte(config), &m)
		m["workDir"] = dir
		raw, _ := json.Marshal(m)
		_, err := New(tools.BuildContext{}, raw)
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != field {
			t.Errorf("%s: err = %v, want a ConfigError at %s", config, err, field)
		}
	}
	d, ok := tools.Builtins.Lookup(Name)
	if !ok {
		t.Fatal("edit is not registered")
	}
	for _, want := range []string{`"maxHistory":{"type":"integer"`, `"default":10`, `"default":10485760`} {
		if !strings.Contains(string(d.ConfigSchema), want) {
			t.Errorf("config schema lacks %s: %s", want, d.ConfigSchema)
		}
	}
	if !strings.Contains(string(d.ArgsSchema), `"enum":["line","search","insert","delete","restore","list_backups"]`) {
		t.Errorf("args schema: %s", d.ArgsSchema)
	}
}
