package components

import (
	"strings"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/utils/str"
)

// fillGlobals fills ${global.x} in LLM settings a chain left at their
// defaults: RuleGo fills the chain's own configuration only.
func fillGlobals(rc types.Config, fields ...*string) {
	env := map[string]any{"global": rc.Properties.Values()}
	for _, f := range fields {
		if strings.Contains(*f, "${global.") {
			*f = str.ExecuteTemplate(*f, env)
		}
	}
}

// llmMissing names the LLM settings that are unset (or still a template
// no global filled): runs fail saying to set them, loading does not.
func llmMissing(url, model string) []string {
	var missing []string
	for _, f := range []struct{ name, v string }{{"url", strings.TrimSpace(url)}, {"model", strings.TrimSpace(model)}} {
		if f.v == "" || strings.Contains(f.v, "${") {
			missing = append(missing, f.name)
		}
	}
	return missing
}
