package identity

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/sessions"
)

// Config chooses how callers are verified.
type Config struct {
	// Methods are any of MethodKey, MethodJWT and MethodProxy; a request
	// is known by the one its credentials are for.
	Methods []string
	// Keys stores the API keys (MethodKey).
	Keys sessions.KeyStore
	// JWT configures MethodJWT.
	JWT JWTConfig
	// Proxy configures MethodProxy.
	Proxy ProxyConfig
	// Now is the clock API key expiries are checked against (time.Now
	// when nil), for tests.
	Now func() time.Time
}

// Verifier knows callers by their credentials. It is safe for concurrent
// use.
type Verifier struct {
	methods []string
	keys    *keyVerifier
	jwt     *jwtVerifier
	proxy   *proxyVerifier
}

// ParseMethods reads a comma-separated list of methods (keys, jwt, proxy).
func ParseMethods(s string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(s, ",") {
		switch m = strings.TrimSpace(m); m {
		case "":
		case "keys", MethodKey:
			out = append(out, MethodKey)
		case MethodJWT, MethodProxy:
			out = append(out, m)
		default:
			return nil, fmt.Errorf("unknown method %q: want keys, jwt or proxy (comma-separated)", m)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// New builds a verifier; a mistake in the configuration is an error that
// names the setting.
func New(cfg Config) (*Verifier, error) {
	if len(cfg.Methods) == 0 {
		return nil, errors.New("no verification method: want keys, jwt or proxy")
	}
	v := &Verifier{methods: cfg.Methods}
	for _, m := range cfg.Methods {
		var err error
		switch m {
		case MethodKey:
			if cfg.Keys == nil {
				return nil, errors.New("API keys need a store that keeps them (bolt or redis --session-store)")
			}
			v.keys = newKeyVerifier(cfg.Keys, cfg.Now)
		case MethodJWT:
			v.jwt, err = newJWTVerifier(cfg.JWT)
		case MethodProxy:
			v.proxy, err = newProxyVerifier(cfg.Proxy)
		default:
			err = fmt.Errorf("unknown method %q", m)
		}
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Methods lists the configured methods, for banners and /healthz.
func (v *Verifier) Methods() []string { return slices.Clone(v.methods) }

// Verify knows the caller of r by bearer, the credential it presented
// (the Authorization header's bearer token, or what the route takes
// instead), or by a trusted proxy's header. It returns the principal, or
// an error wrapping ErrUnauthenticated that says what is wrong.
func (v *Verifier) Verify(r *http.Request, bearer string) (Principal, error) {
	var proxyErr error
	if v.proxy != nil {
		p, present, err := v.proxy.verify(r)
		if present && err == nil {
			return p, nil
		}
		proxyErr = err
	}
	switch {
	case bearer == "":
	case v.keys != nil && strings.HasPrefix(bearer, KeyPrefix):
		return v.keys.verify(r.Context(), bearer)
	case v.jwt != nil && looksLikeJWT(bearer):
		return v.jwt.verify(r.Context(), bearer)
	default:
		return Principal{}, fmt.Errorf("%w: the bearer token is not a credential this server accepts (%s)", ErrUnauthenticated, v.accepted())
	}
	if proxyErr != nil {
		return Principal{}, proxyErr
	}
	return Principal{}, fmt.Errorf("%w: no credentials: send %s", ErrUnauthenticated, v.accepted())
}

// accepted says what credentials the server takes.
func (v *Verifier) accepted() string {
	var ways []string
	if v.keys != nil {
		ways = append(ways, "an API key (Authorization: Bearer rak_...)")
	}
	if v.jwt != nil {
		ways = append(ways, "a JWT from "+v.jwt.cfg.Issuer+" (Authorization: Bearer ...)")
	}
	if v.proxy != nil {
		ways = append(ways, "the "+v.proxy.header+" header through a trusted proxy")
	}
	return strings.Join(ways, ", or ")
}
