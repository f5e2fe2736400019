package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

// identityFlags are serve's flags that verify who callers are (--auth and
// the settings of each method). Each defaults from its RULEAGENT_*
// variable.
type identityFlags struct {
	auth        string
	jwtIssuer   string
	jwtAudience string
	jwtJWKS     string
	jwtClaim    string
	jwtRole     string
	proxyHeader string
	proxyRole   string
	proxies     listFlag
}

func (f *identityFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.auth, "auth", os.Getenv("RULEAGENT_AUTH"), "verify who callers are: keys, jwt or proxy (comma-separated; RULEAGENT_AUTH); the user id then comes from the credentials, never from the body")
	fs.StringVar(&f.jwtIssuer, "jwt-issuer", os.Getenv("RULEAGENT_JWT_ISSUER"), "--auth jwt: the OpenID provider's issuer URL, which the token's iss must equal (RULEAGENT_JWT_ISSUER)")
	fs.StringVar(&f.jwtAudience, "jwt-audience", os.Getenv("RULEAGENT_JWT_AUDIENCE"), "--auth jwt: the audience the token must name, this server (RULEAGENT_JWT_AUDIENCE)")
	fs.StringVar(&f.jwtJWKS, "jwt-jwks", os.Getenv("RULEAGENT_JWT_JWKS"), "--auth jwt: the provider's JWKS URL; default: discovered from the issuer's /.well-known/openid-configuration (RULEAGENT_JWT_JWKS)")
	fs.StringVar(&f.jwtClaim, "jwt-user-claim", envOr("RULEAGENT_JWT_USER_CLAIM", "sub"), "--auth jwt: the claim that holds the user id (RULEAGENT_JWT_USER_CLAIM)")
	fs.StringVar(&f.jwtRole, "jwt-role-claim", os.Getenv("RULEAGENT_JWT_ROLE_CLAIM"), "--auth jwt: the claim that grants roles (an array, or values separated by spaces or commas); "+identity.OperatorClaim+" among them grants the operator role (RULEAGENT_JWT_ROLE_CLAIM); none by default")
	fs.StringVar(&f.proxyHeader, "proxy-user-header", envOr("RULEAGENT_PROXY_USER_HEADER", "X-Forwarded-User"), "--auth proxy: the header the proxy names the user in (RULEAGENT_PROXY_USER_HEADER)")
	fs.StringVar(&f.proxyRole, "proxy-role-header", os.Getenv("RULEAGENT_PROXY_ROLE_HEADER"), "--auth proxy: the header the proxy grants roles in (values separated by commas or spaces); "+identity.OperatorClaim+" among them grants the operator role (RULEAGENT_PROXY_ROLE_HEADER); none by default")
	if v := os.Getenv("RULEAGENT_TRUSTED_PROXIES"); v != "" {
		_ = f.proxies.Set(v)
	}
	fs.Var(&f.proxies, "trusted-proxy", "--auth proxy: the proxies' addresses, CIDRs (comma-separated or repeated; RULEAGENT_TRUSTED_PROXIES); the header is ignored from anywhere else")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// verifier builds the identity verifier the flags ask for (nil for none),
// with the API keys kept in the session store.
func (f *identityFlags) verifier(sess sessions.Store) (*identity.Verifier, error) {
	methods, err := identity.ParseMethods(f.auth)
	if err != nil {
		return nil, usagef("--auth: %v", err)
	}
	if len(methods) == 0 {
		return nil, nil
	}
	cfg := identity.Config{Methods: methods,
		JWT:   identity.JWTConfig{Issuer: f.jwtIssuer, Audience: f.jwtAudience, JWKSURL: f.jwtJWKS, UserClaim: f.jwtClaim, RoleClaim: f.jwtRole},
		Proxy: identity.ProxyConfig{Header: f.proxyHeader, RoleHeader: f.proxyRole}}
	if ks, ok := sess.(sessions.KeyStore); ok {
		cfg.Keys = ks
	}
	if cfg.Proxy.Trusted, err = identity.ParsePrefixes(f.proxies); err != nil {
		return nil, usagef("--trusted-proxy: %v", err)
	}
	v, err := identity.New(cfg)
	if err != nil {
		return nil, usagef("--auth %s: %v", f.auth, err)
	}
	return v, nil
}

// identityBanner says how callers are known.
func identityBanner(w io.Writer, v *identity.Verifier, f *identityFlags) {
	if v == nil {
		fmt.Fprintln(w, "  identity: the caller's word (a request names its user; see --auth)")
		return
	}
	var ways []string
	for _, m := range v.Methods() {
		switch m {
		case identity.MethodKey:
			ways = append(ways, "API keys (ruleagent keys)")
		case identity.MethodJWT:
			w := "JWTs from " + f.jwtIssuer
			if f.jwtRole != "" {
				w += " (operators by their " + f.jwtRole + " claim)"
			}
			ways = append(ways, w)
		case identity.MethodProxy:
			w := f.proxyHeader + " from " + f.proxies.String()
			if f.proxyRole != "" {
				w += " (operators by " + f.proxyRole + ")"
			}
			ways = append(ways, w)
		}
	}
	fmt.Fprintf(w, "  identity: verified by %s\n", strings.Join(ways, ", "))
}
