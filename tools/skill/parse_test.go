package skill

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, dir, in string
		want          Skill
		err           string // part of the error, when it must fail
	}{
		{name: "minimal", dir: "pdf", in: "---\nname: pdf\ndescription: Work with PDF files.\n---\n# PDF\nSteps.\n",
			want: Skill{Name: "pdf", Description: "Work with PDF files.", Body: "# PDF\nSteps.\n"}},
		{name: "name from the directory", dir: "csv-tools", in: "---\ndescription: CSV.\n---\nbody",
			want: Skill{Name: "csv-tools", Description: "CSV.", Body: "body"}},
		{name: "crlf, bom and dots end", dir: "x", in: "\uFEFF---\r\nname: x\r\ndescription: >\r\n  Folded\r\n  text.\r\n...\r\n\r\nBody\r\n",
			want: Skill{Name: "x", Description: "Folded text.", Body: "Body\r\n"}},
		{name: "multi-line description is one line", dir: "x", in: "---\ndescription: |\n  line one\n  ## Fake heading\n---\n",
			want: Skill{Name: "x", Description: "line one ## Fake heading"}},
		{name: "chinese, snake", dir: "x", in: "---\ndescription: d\ndescription_zh: 中文描述\n---\n",
			want: Skill{Name: "x", Description: "d", DescriptionZh: "中文描述"}},
		{name: "chinese, kebab", dir: "x", in: "---\ndescription: d\ndescription-zh: 描述\n---\n",
			want: Skill{Name: "x", Description: "d", DescriptionZh: "描述"}},
		{name: "chinese, camel", dir: "x", in: "---\ndescription: d\ndescriptionZh: 描述\n---\n",
			want: Skill{Name: "x", Description: "d", DescriptionZh: "描述"}},
		{name: "allowed tools list", dir: "x", in: "---\ndescription: d\nallowed-tools: [read, \"bash\"]\n---\n",
			want: Skill{Name: "x", Description: "d", AllowedTools: []string{"read", "bash"}}},
		{name: "allowed tools string", dir: "x", in: "---\ndescription: d\nallowedTools: read, grep ,glob\n---\n",
			want: Skill{Name: "x", Description: "d", AllowedTools: []string{"read", "grep", "glob"}}},
		{name: "unknown fields ignored", dir: "x", in: "---\ndescription: d\nlicense: MIT\nmetadata: {a: 1}\n---\n",
			want: Skill{Name: "x", Description: "d"}},
		{name: "no front matter", dir: "x", in: "# Just markdown\n", err: "no YAML front matter"},
		{name: "empty file", dir: "x", in: "", err: "no YAML front matter"},
		{name: "unclosed front matter", dir: "x", in: "---\ndescription: d\n", err: "not closed"},
		{name: "no description", dir: "x", in: "---\nname: x\n---\nbody", err: "no description"},
		{name: "bad yaml", dir: "x", in: "---\ndescription: [unclosed\n---\n", err: "front matter:"},
		{name: "wrong type", dir: "x", in: "---\nname: [a, b]\ndescription: d\n---\n", err: "front matter:"},
		{name: "bad tools type", dir: "x", in: "---\ndescription: d\nallowed-tools: {a: b}\n---\n", err: "allowed-tools"},
		{name: "upper case name", dir: "x", in: "---\nname: PDF\ndescription: d\n---\n", err: "must match"},
		{name: "path as name", dir: "x", in: "---\nname: ../evil\ndescription: d\n---\n", err: "must match"},
		{name: "bad directory name", dir: "My Skill", in: "---\ndescription: d\n---\n", err: "must match"},
		{name: "too big", dir: "x", in: "---\ndescription: d\n---\n" + strings.Repeat("a", MaxFileSize), err: "limit"},
		{name: "front matter too big", dir: "x", in: "---\ndescription: d\n" + strings.Repeat("# c\n", maxFrontMatterSize/4+10) + "---\n", err: "front matter is over"},
		{name: "not utf-8", dir: "x", in: "---\ndescription: \xff\n---\n", err: "UTF-8"},
		{name: "alias bomb", dir: "x", in: "---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\ndescription: d\n---\n",
			want: Skill{Name: "x", Description: "d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parse(c.dir, []byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != c.want.Name || got.Description != c.want.Description || got.DescriptionZh != c.want.DescriptionZh ||
				got.Body != c.want.Body || !slices.Equal(got.AllowedTools, c.want.AllowedTools) {
				t.Fatalf("got %+v\nwant %+v", *got, c.want)
			}
		})
	}
}

func TestLongDescriptionIsClipped(t *testing.T) {
	got, err := parse("x", []byte("---\ndescription: "+strings.Repeat("é", 2000)+"\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(got.Description)); n != maxDescription || !strings.HasSuffix(got.Description, "…") {
		t.Fatalf("description has %d runes", n)
	}
}
