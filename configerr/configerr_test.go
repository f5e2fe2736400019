package configerr

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"
)

func TestPrefixKeepsTypeAndCause(t *testing.T) {
	deep := Wrap("sandboxRead[1]", fs.ErrNotExist)
	err := fmt.Errorf("building: %w", Prefix("tools[0].config", deep))
	var ce *Error
	if !errors.As(err, &ce) || ce.Path != "tools[0].config.sandboxRead[1]" || ce.Field() != "sandboxRead" {
		t.Fatalf("%#v", ce)
	}
	if !errors.Is(err, ErrConfig) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the kind and the cause are lost")
	}
	if got := Prefix("tools", New("[2]", "x")).(*Error).Path; got != "tools[2]" {
		t.Fatal(got)
	}
	plain := Prefix("url", errors.New("bad"))
	if !errors.As(plain, &ce) || ce.Path != "url" || ce.Msg != "bad" {
		t.Fatalf("%#v", plain)
	}
	if Prefix("x", nil) != nil || Wrap("x", nil) != nil {
		t.Fatal("nil in, nil out")
	}
}

func TestListCarriesEveryError(t *testing.T) {
	l := List{New("a", "one"), New("b[0]", "two")}
	err := Prefix("session", fmt.Errorf("wrapped: %w", l))
	all := All(err)
	if len(all) != 2 || all[0].Path != "session.a" || all[1].Path != "session.b[0]" {
		t.Fatalf("%v", all)
	}
	if !errors.Is(l, ErrConfig) || l.Error() != "a: one; b[0]: two" {
		t.Fatal(l.Error())
	}
	if All(errors.New("plain")) != nil {
		t.Fatal("a plain error holds no configuration error")
	}
}

type dur time.Duration

func (d *dur) UnmarshalJSON(b []byte) error {
	v, err := time.ParseDuration(strings.Trim(string(b), `"`))
	*d = dur(v)
	return err
}

func (dur) ConfigTypeName() string { return "a duration" }

func TestDecodeNamesTheField(t *testing.T) {
	type cfg struct {
		Name    string   `json:"name"`
		Count   int      `json:"count"`
		Tags    []string `json:"tags"`
		Timeout dur      `json:"timeout"`
		Inner   struct {
			Port int `json:"port"`
		} `json:"inner"`
	}
	cases := []struct{ json, path, msg string }{
		{`{"nmae": "x"}`, "nmae", `unknown field (did you mean "name"?)`},
		{`{"count": "7"}`, "count", "a string is not an integer"},
		{`{"tags": "a"}`, "tags", "a string is not a list"},
		{`{"timeout": "later"}`, "timeout", `time: invalid duration "later"`},
		{`{"inner": {"port": true}}`, "inner.port", "a bool is not an integer"},
		{"{\n  \"name\": \"x\",\n  \"count\": 1,,\n}", "", "not valid JSON at line 3, column 14"},
		{`["x"]`, "", "must be a JSON object"},
		{`{"name": "x"} {}`, "", "trailing data"},
	}
	for _, c := range cases {
		var v cfg
		err := Decode([]byte(c.json), &v)
		var ce *Error
		if !errors.As(err, &ce) || ce.Path != c.path || !strings.Contains(ce.Msg, c.msg) {
			t.Errorf("%s: got %v (%#v), want %q at %q", c.json, err, ce, c.msg, c.path)
		}
	}
	var v cfg
	if err := Decode([]byte(`{"name": "a", "timeout": "2s"}`), &v); err != nil || v.Name != "a" || v.Timeout != dur(2*time.Second) {
		t.Fatal(err, v)
	}
	if err := Decode(nil, &v); err != nil {
		t.Fatal(err)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"id", "name", "description", "connections", "ruleChain", "targetId"}
	for key, want := range map[string]string{"nmae": "name", "descripton": "description", "conections": "connections",
		"ruleChian": "ruleChain", "targetID": "targetId", "TARGETID": "targetId", "colour": "", "xy": "", "name": ""} {
		if got := Suggest(key, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", key, got, want)
		}
	}
}
