package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// JWTConfig says which JWTs identify callers: those an OpenID provider
// signed (a key of its JWKS), for this server (the audience), unexpired.
type JWTConfig struct {
	// Issuer is the provider's issuer URL; the token's iss must equal it.
	Issuer string
	// Audience must be among the token's aud.
	Audience string
	// JWKSURL is where the provider publishes its keys; empty: the
	// jwks_uri of Issuer/.well-known/openid-configuration.
	JWKSURL string
	// UserClaim names the claim that holds the user id ("sub" when empty).
	UserClaim string
	// RoleClaim, when set, names the claim that grants roles: a string
	// (values separated by spaces or commas, as OAuth's scope) or an array
	// of strings; OperatorClaim among them grants RoleOperator.
	RoleClaim string
	// CacheTTL is how long fetched keys are used before they are fetched
	// again (10 minutes when zero).
	CacheTTL time.Duration
	// MinRefresh is the least time between two fetches caused by tokens
	// signed with an unknown key (a rotation); 30s when zero.
	MinRefresh time.Duration
	// Client fetches the keys; one with a 10s timeout when nil.
	Client *http.Client
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time
}

// algorithms are the signature algorithms accepted: asymmetric only, so a
// public key can never be used as an HMAC secret, and never "none".
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// leeway is the clock skew allowed on exp, nbf and iat.
const leeway = time.Minute

// maxJWKS bounds a fetched key set or discovery document.
const maxJWKS = 1 << 20

// jwtVerifier checks JWTs against the provider's keys, which it fetches
// and caches, fetching again when a token names a key it does not know
// (the provider rotated its keys) and when the cache is old.
type jwtVerifier struct {
	cfg JWTConfig

	mu       sync.Mutex
	jwksURL  string
	keys     jose.JSONWebKeySet
	fetched  time.Time // when keys were fetched
	lastTry  time.Time // the last fetch, successful or not
	fetchErr error
}

func newJWTVerifier(cfg JWTConfig) (*jwtVerifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("JWT verification needs the issuer and the audience (--jwt-issuer, --jwt-audience)")
	}
	if cfg.JWKSURL == "" {
		if err := checkFetchURL(cfg.Issuer); err != nil {
			return nil, fmt.Errorf("--jwt-issuer: %w", err)
		}
	} else if err := checkFetchURL(cfg.JWKSURL); err != nil {
		return nil, fmt.Errorf("--jwt-jwks: %w", err)
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = 10 * time.Minute
	}
	if cfg.MinRefresh <= 0 {
		cfg.MinRefresh = 30 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &jwtVerifier{cfg: cfg, jwksURL: cfg.JWKSURL}, nil
}

// checkFetchURL accepts https URLs, and http ones on loopback only: keys
// fetched in clear from the network could be anyone's.
func checkFetchURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("%q must be an https URL (http only on loopback)", raw)
}

// looksLikeJWT reports whether a bearer credential is a compact JWS.
func looksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 && strings.HasPrefix(s, "eyJ") }

func (v *jwtVerifier) verify(ctx context.Context, token string) (Principal, error) {
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: the JWT cannot be parsed or uses an algorithm not accepted: %v", ErrUnauthenticated, err)
	}
	if len(tok.Headers) != 1 {
		return Principal{}, fmt.Errorf("%w: the JWT must have exactly one signature", ErrUnauthenticated)
	}
	kid := tok.Headers[0].KeyID
	keys, err := v.keysFor(ctx, kid)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	var std jwt.Claims
	var extra map[string]any
	verified := false
	for _, k := range keys {
		if tok.Claims(k, &std, &extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return Principal{}, fmt.Errorf("%w: the JWT's signature does not verify with the provider's key %q", ErrUnauthenticated, kid)
	}
	if std.Expiry == nil {
		return Principal{}, fmt.Errorf("%w: the JWT has no expiry (exp)", ErrUnauthenticated)
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: v.cfg.Now()}, leeway)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return Principal{}, fmt.Errorf("%w: the JWT's issuer is %q, not %q", ErrUnauthenticated, std.Issuer, v.cfg.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return Principal{}, fmt.Errorf("%w: the JWT is not for audience %q", ErrUnauthenticated, v.cfg.Audience)
	case errors.Is(err, jwt.ErrExpired):
		return Principal{}, fmt.Errorf("%w: %w: the JWT has expired", ErrUnauthenticated, ErrExpired)
	case err != nil:
		return Principal{}, fmt.Errorf("%w: the JWT is not valid now: %v", ErrUnauthenticated, err)
	}
	user, _ := extra[v.cfg.UserClaim].(string)
	if err := CheckUser(user); err != nil {
		return Principal{}, fmt.Errorf("%w: the JWT's %q claim is not a user id: %v", ErrUnauthenticated, v.cfg.UserClaim, err)
	}
	p := Principal{User: user, Method: MethodJWT}
	if v.cfg.RoleClaim != "" && slices.Contains(claimValues(extra[v.cfg.RoleClaim]), OperatorClaim) {
		p.Role = RoleOperator
	}
	return p, nil
}

// claimValues reads a role claim: an array of strings, or one string of
// values separated by spaces or commas. Anything else holds none.
func claimValues(v any) []string {
	switch x := v.(type) {
	case string:
		return splitValues(x)
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// splitValues splits a list of values separated by spaces or commas.
func splitValues(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}

// keysFor returns the provider's keys that may have signed a token with
// kid (every signing key when kid is empty), fetching them when the cache
// is old or does not know kid.
func (v *jwtVerifier) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.cfg.Now()
	stale := v.fetched.IsZero() || now.Sub(v.fetched) >= v.cfg.CacheTTL
	if found := v.match(kid); len(found) > 0 && !stale {
		return found, nil
	}
	// A token naming an unknown key fetches at most every MinRefresh: a
	// stream of forged kids cannot hammer the provider.
	if stale || now.Sub(v.lastTry) >= v.cfg.MinRefresh {
		v.lastTry = now
		if err := v.fetch(ctx); err != nil {
			v.fetchErr = err
		} else {
			v.fetchErr = nil
			v.fetched = now
		}
	}
	if found := v.match(kid); len(found) > 0 {
		return found, nil
	}
	if v.fetchErr != nil {
		return nil, fmt.Errorf("the provider's keys could not be fetched: %v", v.fetchErr)
	}
	return nil, fmt.Errorf("the JWT is signed with key %q, which the provider does not publish", kid)
}

// match returns the cached signing keys for kid. The caller holds v.mu.
func (v *jwtVerifier) match(kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range v.keys.Keys {
		if (k.Use == "" || k.Use == "sig") && k.IsPublic() && (kid == "" || k.KeyID == kid) {
			out = append(out, k)
		}
	}
	return out
}

// fetch reads the key set (discovering its URL first when needed). The
// caller holds v.mu.
func (v *jwtVerifier) fetch(ctx context.Context) error {
	if v.jwksURL == "" {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := v.getJSON(ctx, strings.TrimSuffix(v.cfg.Issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
			return fmt.Errorf("OpenID discovery: %w", err)
		}
		if doc.Issuer != v.cfg.Issuer {
			return fmt.Errorf("OpenID discovery: the document's issuer is %q, not %q", doc.Issuer, v.cfg.Issuer)
		}
		if err := checkFetchURL(doc.JWKSURI); err != nil {
			return fmt.Errorf("OpenID discovery: jwks_uri: %w", err)
		}
		v.jwksURL = doc.JWKSURI
	}
	var set jose.JSONWebKeySet
	if err := v.getJSON(ctx, v.jwksURL, &set); err != nil {
		return fmt.Errorf("JWKS: %w", err)
	}
	v.keys = set
	return nil
}

func (v *jwtVerifier) getJSON(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return err
	}
	if len(b) > maxJWKS {
		return fmt.Errorf("%s is larger than %d bytes", u, maxJWKS)
	}
	return json.Unmarshal(b, out)
}
