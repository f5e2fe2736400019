package tools

// offer is the part of one catalog a run's policy lets the model see.
type offer struct {
	cat       *catalog
	toolsJSON []byte
	names     []string
}

// Offered is what the model may see of the set in run r: the OpenAI
// `tools` array and the names of the tools r's policy allows, in
// declaration order. A denied tool is never offered. The set may change
// after it was built (an MCP server's list, a sub-agent redeployed), so the
// loop asks on every turn; the answer is kept per run while the set is
// unchanged. Without a policy it is the set's own encoding, at no cost.
func (s *Set) Offered(r *Run) (toolsJSON []byte, names []string) {
	if s == nil || s.cat.Load() == nil {
		return nil, nil
	}
	cat := s.cat.Load()
	if r == nil || r.Policy.Empty() {
		return cat.toolsJSON, cat.names
	}
	r.offerMu.Lock()
	defer r.offerMu.Unlock()
	if o := r.offer; o != nil && o.cat == cat {
		return o.toolsJSON, o.names
	}
	o := &offer{cat: cat, names: make([]string, 0, len(cat.entries))}
	b := make([]byte, 0, len(cat.toolsJSON))
	b = append(b, '[')
	for i, e := range cat.entries {
		if !r.Policy.Decide(e.Ref).Allowed() {
			continue
		}
		if len(o.names) > 0 {
			b = append(b, ',')
		}
		o.names = append(o.names, e.Info.Name)
		b = append(b, cat.toolsJSON[cat.spans[i][0]:cat.spans[i][1]]...)
	}
	switch len(o.names) {
	case len(cat.entries):
		o.toolsJSON = cat.toolsJSON
	case 0: // no tools at all, as for an agent without any
	default:
		o.toolsJSON = append(b, ']')
	}
	r.offer = o
	return o.toolsJSON, o.names
}
