package server

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/rulego/rulego/api/types"
)

// EndpointPolicy says which endpoints a deployed chain may start
// (metadata.endpoints in its DSL), and where those that listen may bind.
type EndpointPolicy struct {
	// Types are the endpoint types chains may start, by RuleGo's names or
	// aliases (http, ws, schedule, net, mqtt, ws_client, net_client, ...).
	// Nil means DefaultEndpointTypes; "*" allows every type.
	Types []string
	// Bind are the hosts listening endpoints may bind besides loopback,
	// which is always allowed: IP addresses or host names, or "*" for any
	// address (":9090", every interface, needs "*").
	Bind []string
}

// DefaultEndpointTypes are the endpoint types allowed by default: those
// that listen (on loopback, unless Bind allows more) or run on a timer.
// Types that connect out to brokers and servers (mqtt, ws_client,
// net_client) must be allowed explicitly.
var DefaultEndpointTypes = []string{"http", "ws", "net", "schedule"}

// endpointAliases maps RuleGo's endpoint type names and aliases to one name.
var endpointAliases = map[string]string{
	"endpoint/http": "http", "rest": "http", "http": "http",
	"endpoint/ws": "ws", "websocket": "ws", "ws": "ws",
	"endpoint/net": "net", "tcp": "net", "net": "net",
	"endpoint/schedule": "schedule", "timer": "schedule", "schedule": "schedule",
	"endpoint/mqtt": "mqtt", "mqtt": "mqtt",
	"endpoint/ws_client": "ws_client", "ws_client": "ws_client",
	"endpoint/net_client": "net_client", "net_client": "net_client",
}

// listening are the endpoint types whose "server" is an address they bind.
var listening = []string{"http", "ws", "net"}

func endpointKind(typ string) string {
	if k, ok := endpointAliases[strings.ToLower(typ)]; ok {
		return k
	}
	return strings.TrimPrefix(strings.ToLower(typ), "endpoint/")
}

// Check reports what the policy refuses in the endpoints of chain DSL,
// each at its JSON path, as a server with this policy refuses the chain
// (ruleagent validate --endpoint-types, --endpoint-bind): cfg holds the
// ${global.x} values the endpoints are filled in with. DSL that does not
// decode has no endpoints to check (its own problems are elsewhere).
func (p EndpointPolicy) Check(cfg types.Config, dsl []byte) []Problem {
	eps, _, err := endpointDefsOf(cfg, "", dsl)
	if err != nil {
		return nil
	}
	return p.check(eps)
}

// check reports what the policy refuses in a chain's endpoints, each at
// its JSON path.
func (p EndpointPolicy) check(eps []EndpointInfo) []Problem {
	types := p.Types
	if types == nil {
		types = DefaultEndpointTypes
	}
	var out []Problem
	for i, e := range eps {
		path := fmt.Sprintf("metadata.endpoints[%d]", i)
		kind := endpointKind(e.Type)
		if !slices.Contains(types, "*") && !slices.ContainsFunc(types, func(t string) bool { return endpointKind(t) == kind }) {
			out = append(out, Problem{Path: path + ".type", Message: fmt.Sprintf(
				"endpoint type %q is not allowed by the server's endpoint policy (allowed: %s; see serve --endpoint-types)", e.Type, strings.Join(types, ", "))})
			continue
		}
		if !slices.Contains(listening, kind) {
			continue
		}
		if why := p.bindRefusal(e.Address); why != "" {
			out = append(out, Problem{Path: path + ".configuration.server", Message: why})
		}
	}
	return out
}

// bindRefusal says why addr may not be bound, or "" when it may.
func (p EndpointPolicy) bindRefusal(addr string) string {
	if slices.Contains(p.Bind, "*") {
		return ""
	}
	const hint = " (the endpoint policy allows loopback addresses only; see serve --endpoint-bind)"
	if strings.HasPrefix(addr, "ref://") {
		return fmt.Sprintf("%q shares a server by reference, which the endpoint policy cannot check%s", addr, hint)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not a host:port address", addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		return fmt.Sprintf("%q listens on every interface%s", addr, hint)
	}
	if strings.EqualFold(host, "localhost") || slices.ContainsFunc(p.Bind, func(b string) bool { return strings.EqualFold(b, host) }) {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("%q is not a loopback address%s", addr, hint)
}
