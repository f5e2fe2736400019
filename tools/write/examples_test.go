package write

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows, one per mode, in order.
// They must pass the schema check the wrapper applies, and then succeed.
var examples = []string{
	`{"path":"notes/todo.md","content":"# TODO\n- write tests\n"}`,
	`{"path":"notes/todo.md","content":"# TODO\n- ship it\n","mode":"overwrite"}`,
	`{"path":"notes/todo.md","content":"- and celebrate\n","mode":"append"}`,
}

func TestExamples(t *testing.T) {
	tl := newTool(t, t.TempDir(), "")
	schema, err := tools.CompileSchema(tl.Info().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		if err := schema.Validate([]byte(ex)); err != nil {
			t.Errorf("%s: schema: %v", ex, err)
		}
		res, err := tl.Call(context.Background(), json.RawMessage(ex))
		if err != nil {
			t.Errorf("%s: %v", ex, err)
		}
		t.Logf("%s\n%s", ex, res.Text)
	}
	for _, bad := range []string{`{"path":"x"}`, `{"path":"x","content":"y","mode":"truncate"}`} {
		if err := schema.Validate([]byte(bad)); err == nil {
			t.Errorf("the schema must refuse %s", bad)
		}
	}
}
