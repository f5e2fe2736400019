package components

import (
	"maps"
	"sync"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/components/base"
)

// RuleGo reports a node's Init error as text ("nodeType:x for id:y init
// error:..."), which loses the error's type and so its JSON path. A host
// that wants them registers an InitErrors in the configuration it builds
// one chain with: ruleagent's nodes put their Init errors there, by node
// id, as they are.

// InitErrors collects the Init errors of ruleagent's nodes during one
// build of a chain. It is safe for concurrent use.
type InitErrors struct {
	mu     sync.Mutex
	byNode map[string]error
}

// initErrorsUDF is the types.Config.Udf key of a build's InitErrors, held
// as a types.Script (RuleGo copies other Udf values into JavaScript VMs).
const initErrorsUDF = "ruleagent.initErrors"

// WithInitErrors returns a copy of cfg (its Udf map copied) that collects
// the Init errors of the chain built with it into the returned InitErrors.
func WithInitErrors(cfg types.Config) (types.Config, *InitErrors) {
	ie := &InitErrors{byNode: map[string]error{}}
	cfg.Udf = maps.Clone(cfg.Udf)
	if cfg.Udf == nil {
		cfg.Udf = map[string]any{}
	}
	cfg.Udf[initErrorsUDF] = types.Script{Type: initErrorsUDF, Content: ie}
	return cfg, ie
}

// Node returns the error node id's Init returned, or nil.
func (ie *InitErrors) Node(id string) error {
	ie.mu.Lock()
	defer ie.mu.Unlock()
	return ie.byNode[id]
}

// reportInit records a node's Init error in the build's InitErrors, if the
// host registered one.
func reportInit(rc types.Config, configuration types.Configuration, err error) {
	if err == nil {
		return
	}
	sc, ok := rc.Udf[initErrorsUDF].(types.Script)
	if !ok {
		return
	}
	ie, ok := sc.Content.(*InitErrors)
	if !ok {
		return
	}
	id := base.NodeUtils.GetSelfDefinition(configuration).Id
	ie.mu.Lock()
	ie.byNode[id] = err
	ie.mu.Unlock()
}
