package write

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows, one per mode, in order.
// They must pass the schema check the wrapper applies, and then succeed.
var examples = []struct{ call, want string }{
	{`{"path":"notes/todo.md","content":"# TODO\n- write tests\n"}`, "created notes/todo.md (21 bytes)"},
	{`{"path":"notes/todo.md","content":"# TODO\n- ship it\n","mode":"overwrite"}`, "overwrote notes/todo.md (17 bytes; it was 21 bytes)"},
	{`{"path":"notes/todo.md","content":"- and celebrate\n","mode":"append"}`,
		"appended 16 bytes to notes/todo.md (now 71 bytes), after a timestamp separator line (54 bytes added in all)"},
}

func TestExamples(t *testing.T) {
	tl := newTool(t, t.TempDir(), "")
	schema, err := tools.CompileSchema(tl.Info().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		if err := schema.Validate([]byte(ex.call)); err != nil {
			t.Errorf("%s: schema: %v", ex.call, err)
		}
		res, err := tl.Call(context.Background(), json.RawMessage(ex.call))
		if err != nil || res.Text != ex.want {
			t.Errorf("%s: %v\n%s\nwant:\n%s", ex.call, err, res.Text, ex.want)
		}
	}
	for _, bad := range []string{`{"path":"x"}`, `{"path":"x","content":"y","mode":"truncate"}`} {
		if err := schema.Validate([]byte(bad)); err == nil {
			t.Errorf("the schema must refuse %s", bad)
		}
	}
}
