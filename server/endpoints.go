package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/server/catalog"

	"github.com/rulego/rulego/api/types"
	endpointapi "github.com/rulego/rulego/api/types/endpoint"
	"github.com/rulego/rulego/endpoint"
	"github.com/rulego/rulego/utils/dsl"
	"github.com/rulego/rulego/utils/str"
)

// The endpoints a chain declares in its DSL (metadata.endpoints: http,
// schedule, websocket, ...) are started by the store, not by RuleGo's
// engine (the store's RuleGo config has EndpointEnabled off), so that:
//
//   - they are checked against the endpoint policy before anything starts;
//   - a new version's endpoints start before it is published, and if one
//     fails (a port taken), those started are stopped, the ones the old
//     version had are restarted, and the deploy is refused: never a
//     half-started chain, and the running version stays up;
//   - endpoints that did not change keep running across a redeploy (their
//     routes resolve the chain by id, so they reach the new version);
//   - a deleted chain's endpoints stop.

// runningEndpoint is one started endpoint of a chain.
type runningEndpoint struct {
	def   EndpointInfo
	key   string // the processed definition, to tell what changed
	ep    endpointapi.DynamicEndpoint
	chain *types.RuleChain // the definition it was started for
}

// EndpointInfo describes an endpoint a chain runs (see package catalog).
type EndpointInfo = catalog.EndpointInfo

// endpointDefs reads chain id's endpoints from its DSL, with ${global.x}
// and ${vars.x} filled in and empty router targets pointed at the chain,
// as RuleGo's own endpoint aspect prepares them.
func (s *Store) endpointDefs(id string, dslBytes []byte) ([]EndpointInfo, *types.RuleChain, error) {
	return endpointDefsOf(s.cfg, id, dslBytes)
}

// endpointDefsOf is endpointDefs with the configuration cfg (its globals).
func endpointDefsOf(cfg types.Config, id string, dslBytes []byte) ([]EndpointInfo, *types.RuleChain, error) {
	if !hasEndpoints(dslBytes) {
		return nil, nil, nil
	}
	rc, err := cfg.Parser.DecodeRuleChain(dslBytes)
	if err != nil {
		return nil, nil, err
	}
	env := dsl.GetInitNodeEnv(cfg, rc)
	var out []EndpointInfo
	for i, def := range rc.Metadata.Endpoints {
		if def == nil {
			continue
		}
		def.Configuration = fillConfiguration(env, def.Configuration)
		def.Processors = fillStrings(env, def.Processors)
		var routes []string
		for _, r := range def.Routers {
			if r == nil {
				continue
			}
			r.Params = fillAny(env, r.Params)
			r.From.Path = str.ExecuteTemplate(r.From.Path, env)
			r.From.Configuration = fillConfiguration(env, r.From.Configuration)
			r.From.Processors = fillStrings(env, r.From.Processors)
			r.To.Path = str.ExecuteTemplate(r.To.Path, env)
			if r.To.Path == "" {
				r.To.Path = id
			}
			r.To.Configuration = fillConfiguration(env, r.To.Configuration)
			r.To.Processors = fillStrings(env, r.To.Processors)
			routes = append(routes, r.From.Path)
		}
		if def.Id == "" {
			def.Id = fmt.Sprintf("endpoint%d", i)
		}
		addr, _ := def.Configuration["server"].(string)
		out = append(out, EndpointInfo{ID: def.Id, Type: def.Type, Address: addr, Routes: routes, Def: def})
	}
	return out, &rc, nil
}

// switchEndpoints moves chain id from the endpoints it runs to defs. On
// failure everything is as it was, and the error says which endpoint
// failed.
func (s *Store) switchEndpoints(id string, defs []EndpointInfo, rc *types.RuleChain) error {
	s.epMu.Lock()
	defer s.epMu.Unlock()
	old := s.endpoints[id]
	var oldChain *types.RuleChain
	if len(old) > 0 {
		oldChain = old[0].chain
	}
	want := map[string]EndpointInfo{}
	for _, d := range defs {
		b, _ := json.Marshal(d.Def)
		want[string(b)] = d
	}
	var stopped []runningEndpoint
	kept := map[string]runningEndpoint{}
	for _, r := range old {
		if _, ok := want[r.key]; ok {
			kept[r.key] = r
			continue
		}
		r.ep.Destroy()
		stopped = append(stopped, r)
	}
	var started []runningEndpoint
	restore := func() {
		for _, r := range started {
			r.ep.Destroy()
		}
		back := slices.Collect(maps.Values(kept))
		for _, r := range stopped {
			again, err := s.startEndpoint(r.def, r.key, oldChain)
			if err != nil {
				s.log.Error("an endpoint of the running version could not be restarted", "chain", id, "endpoint", r.def.ID, "err", err)
				continue
			}
			back = append(back, again)
		}
		s.endpoints[id] = back
	}
	next := slices.Collect(maps.Values(kept))
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if _, ok := kept[key]; ok {
			continue
		}
		r, err := s.startEndpoint(want[key], key, rc)
		if err != nil {
			restore()
			return fmt.Errorf("endpoint %q (%s) did not start: %w", want[key].ID, want[key].Type, err)
		}
		started = append(started, r)
		next = append(next, r)
	}
	slices.SortFunc(next, func(a, b runningEndpoint) int { return strings.Compare(a.def.ID, b.def.ID) })
	if len(next) == 0 {
		delete(s.endpoints, id)
	} else {
		s.endpoints[id] = next
	}
	return nil
}

// startEndpoint makes and starts one endpoint.
func (s *Store) startEndpoint(d EndpointInfo, key string, rc *types.RuleChain) (runningEndpoint, error) {
	cfg := s.cfg
	cfg.EndpointEnabled = true
	ep, err := endpoint.NewFromDef(*d.Def, endpointapi.DynamicEndpointOptions.WithConfig(cfg),
		endpointapi.DynamicEndpointOptions.WithRouterOpts(endpointapi.RouterOptions.WithRuleGo(s.pool)),
		endpointapi.DynamicEndpointOptions.WithRuleChain(rc))
	if err != nil {
		return runningEndpoint{}, err
	}
	if err := ep.Start(); err != nil {
		ep.Destroy()
		return runningEndpoint{}, err
	}
	return runningEndpoint{def: d, key: key, ep: ep, chain: rc}, nil
}

// stopEndpoints stops every endpoint of chain id.
func (s *Store) stopEndpoints(id string) {
	s.epMu.Lock()
	defer s.epMu.Unlock()
	for _, r := range s.endpoints[id] {
		r.ep.Destroy()
	}
	delete(s.endpoints, id)
}

// Endpoints lists the endpoints chain id runs.
func (s *Store) Endpoints(id string) []EndpointInfo {
	s.epMu.Lock()
	defer s.epMu.Unlock()
	var out []EndpointInfo
	for _, r := range s.endpoints[id] {
		out = append(out, r.def)
	}
	return out
}

func fillConfiguration(env map[string]any, c types.Configuration) types.Configuration {
	out := make(types.Configuration, len(c))
	for k, v := range c {
		if sv, ok := v.(string); ok {
			out[k] = str.ExecuteTemplate(sv, env)
		} else {
			out[k] = v
		}
	}
	return out
}

func fillStrings(env map[string]any, in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, str.ExecuteTemplate(s, env))
	}
	return out
}

func fillAny(env map[string]any, in []any) []any {
	out := make([]any, 0, len(in))
	for _, v := range in {
		if s, ok := v.(string); ok {
			v = str.ExecuteTemplate(s, env)
		}
		out = append(out, v)
	}
	return out
}
