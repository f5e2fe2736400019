// Package identity says who a request to the server comes from, verified:
// a per-user API key kept hashed in the data store, a JWT checked against
// an OpenID provider's keys (JWKS), or a header set by a trusted proxy.
// Without it, the user a request names in its body is the caller's word.
package identity

import (
	"context"
	"errors"
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
}

// Verified reports whether the principal is a verified user, bound to
// its own runs and to its own user id.
func (p Principal) Verified() bool { return p.User != "" }

// ErrUnauthenticated refuses a request whose credentials are missing or
// do not verify.
var ErrUnauthenticated = errors.New("unauthenticated")

// ErrClaim refuses a request whose body names another user than the
// verified one.
var ErrClaim = errors.New("the request names another user than the caller's verified identity")

type principalKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// From returns the principal ctx carries (the zero Principal when none).
func From(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
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
// owner: the operator and unverified callers (one identity: everything is
// theirs) may; a verified user only their own.
func MayAct(p Principal, owner string) bool {
	return !p.Verified() || p.User == owner
}
