package scrub_test

import (
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// The scrubber is what BuildContext.Secrets hands to tool factories.
var _ tools.SecretRegistrar = (*scrub.Scrubber)(nil)
