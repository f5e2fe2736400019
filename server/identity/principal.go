// Package identity says who a request to the server comes from, verified:
// a per-user API key kept hashed in the data store, a JWT checked against
// an OpenID provider's keys (JWKS), or a header set by a trusted proxy.
// Without it, the user a request names in its body is the caller's word.
package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/ruleagent/ruleagent/tools"
)

// Methods by which a request's caller is known.
const (
	// MethodToken is the operator's shared token (serve --token): the
	// operator is trusted with every user, and names one in the body.
	MethodToken = "token"
	// MethodKey is a per-user API key (ruleagent keys create).
	MethodKey = "key"
	// MethodJWT is a JWT verified against the configured JWKS.
	MethodJWT = "jwt"
	// MethodProxy is a header set by a trusted proxy.
	MethodProxy = "proxy"
)

// Principal is who a request comes from.
type Principal struct {
	// User is the verified user id; empty for the operator and when no
	// verified identity is configured.
	User string
	// Method says how the caller was known (Method* constants); empty
	// when the server verifies nobody.
	Method string
	// KeyID names the API key used (MethodKey).
	KeyID string
	// Role is what the credential grants beyond the user's own runs:
	// RoleOperator, or "" for a user.
	Role string
}

// Roles a verified credential may grant.
const (
	// RoleOperator administers the server like the operator's --token:
	// it deploys and deletes chains, manages API keys, discovers MCP
	// servers, and sees and acts on every caller's runs. Its own runs
	// still carry its own user id.
	RoleOperator = "operator"
	// OperatorClaim is how a JWT's role claim (--jwt-role-claim) and a
	// trusted proxy's role header (--proxy-role-header) grant
	// RoleOperator: one of their values.
	OperatorClaim = "ruleagent:operator"
)

// ErrBadRole refuses a role that is not one of the Role* constants.
var ErrBadRole = errors.New(`a role is "operator" or none`)

// CheckRole refuses a role this server does not know.
func CheckRole(role string) error {
	if role != "" && role != RoleOperator {
		return fmt.Errorf("%w: %q", ErrBadRole, role)
	}
	return nil
}

// Verified reports whether the principal is a verified user, bound to
// its own runs and to its own user id.
func (p Principal) Verified() bool { return p.User != "" }

// Operator reports whether p administers the server: the operator's
// --token, every caller of a server that verifies nobody (one identity),
// and a verified user granted RoleOperator. Everyone else is a user, who
// runs chains and acts on their own runs only.
func (p Principal) Operator() bool { return !p.Verified() || p.Role == RoleOperator }

// ErrUnauthenticated refuses a request whose credentials are missing or
// do not verify.
var ErrUnauthenticated = errors.New("unauthenticated")

// ErrClaim refuses a request whose body names another user than the
// verified one.
var ErrClaim = errors.New("the request names another user than the caller's verified identity")

// With returns ctx carrying p. It is kept as whom the calls made within
// ctx act for (tools.WithOnBehalfOf), so that an agent's call through the
// in-process "self" MCP server is still p's.
func With(ctx context.Context, p Principal) context.Context {
	return tools.WithOnBehalfOf(ctx, p)
}

// From returns the principal ctx carries (the zero Principal when none).
func From(ctx context.Context) Principal {
	p, _ := tools.OnBehalfOf(ctx).(Principal)
	return p
}

// Claim decides the user id of a run from the body's claim: with a
// verified principal, an absent claim or the same user gives the verified
// id, and another user is refused with ErrClaim; otherwise the claim
// stands as the caller's word.
func Claim(p Principal, claimed string) (string, error) {
	if !p.Verified() {
		return claimed, nil
	}
	if claimed != "" && claimed != p.User {
		return "", ErrClaim
	}
	return p.User, nil
}

// MayAct reports whether p may see, cancel or answer a run owned by
// owner: operators (the --token, a verified user granted RoleOperator)
// and unverified callers (one identity: everything is theirs) may; a
// verified user only their own.
func MayAct(p Principal, owner string) bool {
	return p.Operator() || p.User == owner
}

// ErrNotOperator refuses a user an action reserved to operators.
var ErrNotOperator = errors.New("this is an operator's action")

// RequireOperator returns nil when p may administer the server, else an
// error wrapping ErrNotOperator that says what to do; what names the
// action ("deploying a chain").
func RequireOperator(p Principal, what string) error {
	if p.Operator() {
		return nil
	}
	return fmt.Errorf("%w: %s needs the operator's --token or a credential granted the operator role "+
		"(an API key made with --role operator, a JWT whose role claim holds %q, or the trusted proxy's role header), "+
		"and %q is a user", ErrNotOperator, what, OperatorClaim, p.User)
}
