package identity

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/ruleagent/ruleagent/sessions"
)

func request(remote, bearer string, hdr ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/runs", nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	return r
}

// API keys: made once, stored hashed, verified by their secret; a
// revoked, tampered or unknown key is refused.
func TestAPIKeys(t *testing.T) {
	store := sessions.NewMemory()
	v, err := New(Config{Methods: []string{MethodKey}, Keys: store})
	if err != nil {
		t.Fatal(err)
	}
	key, rec, err := NewKey("alice", "laptop", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rec.Hash, key[len(KeyPrefix)+17:]) || !strings.HasPrefix(key, KeyPrefix+rec.ID+"_") {
		t.Fatalf("key %q, record %+v", key, rec)
	}
	if err := store.PutKey(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(request("192.0.2.1:5", ""), key)
	if err != nil || p != (Principal{User: "alice", Method: MethodKey, KeyID: rec.ID}) {
		t.Fatalf("verify: %+v %v", p, err)
	}
	for name, bad := range map[string]string{
		"tampered":  key[:len(key)-2] + "xx",
		"unknown":   KeyPrefix + "0123456789abcdef_secret",
		"malformed": KeyPrefix + "nope",
		"not ours":  "sk-something",
		"none":      "",
	} {
		if _, err := v.Verify(request("192.0.2.1:5", ""), bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := store.DeleteKey(t.Context(), rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(request("192.0.2.1:5", ""), key); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked: %v", err)
	}
	for _, user := range []string{"", " alice", "a\nb", strings.Repeat("x", 300)} {
		if _, _, err := NewKey(user, "", time.Now()); !errors.Is(err, ErrBadUser) {
			t.Errorf("user %q: %v", user, err)
		}
	}
}

// provider is an OpenID provider on loopback: discovery, a JWKS it can
// rotate, and real RSA and EC keys that sign tokens.
type provider struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	keys   map[string]crypto.Signer // kid -> private key, published
	fetchs int
}

func newProvider(t *testing.T) *provider {
	p := &provider{t: t, keys: map[string]crypto.Signer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.srv.URL, "jwks_uri": p.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.fetchs++
		var set jose.JSONWebKeySet
		for kid, k := range p.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public(), KeyID: kid, Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(set)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) addRSA(kid string) crypto.Signer {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.keys[kid] = k
	p.mu.Unlock()
	return k
}

func (p *provider) addEC(kid string) crypto.Signer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.keys[kid] = k
	p.mu.Unlock()
	return k
}

func (p *provider) remove(kid string) {
	p.mu.Lock()
	delete(p.keys, kid)
	p.mu.Unlock()
}

func (p *provider) fetches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fetchs
}

// sign makes a token with key (kid) and claims.
func sign(t *testing.T, key crypto.Signer, alg jose.SignatureAlgorithm, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// JWTs: one the provider signed for this audience is accepted (RSA and
// EC, the keys discovered and cached); a wrong audience or issuer, an
// expired token, an unknown key, another signer's key and a token without
// expiry are refused; a rotated key is picked up.
func TestJWTAgainstJWKS(t *testing.T) {
	prov := newProvider(t)
	rsaKey := prov.addRSA("r1")
	ecKey := prov.addEC("e1")
	v, err := New(Config{Methods: []string{MethodJWT}, JWT: JWTConfig{Issuer: prov.srv.URL, Audience: "ruleagent",
		UserClaim: "email", MinRefresh: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": prov.srv.URL, "aud": []string{"ruleagent", "other"}, "sub": "u-1", "email": "alice@example.com",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		for k, val := range extra {
			if val == nil {
				delete(c, k)
			} else {
				c[k] = val
			}
		}
		return c
	}
	for name, tok := range map[string]string{
		"rsa": sign(t, rsaKey, jose.RS256, "r1", claims(nil)),
		"ec":  sign(t, ecKey, jose.ES256, "e1", claims(nil)),
	} {
		p, err := v.Verify(request("192.0.2.1:5", ""), tok)
		if err != nil || p != (Principal{User: "alice@example.com", Method: MethodJWT}) {
			t.Fatalf("%s: %+v %v", name, p, err)
		}
	}
	if n := prov.fetches(); n != 1 {
		t.Fatalf("the keys were fetched %d times, want once (cached)", n)
	}
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, tc := range map[string]struct {
		tok, why string
	}{
		"wrong audience": {sign(t, rsaKey, jose.RS256, "r1", claims(map[string]any{"aud": "someone-else"})), "audience"},
		"wrong issuer":   {sign(t, rsaKey, jose.RS256, "r1", claims(map[string]any{"iss": "https://evil.example"})), "issuer"},
		"expired":        {sign(t, rsaKey, jose.RS256, "r1", claims(map[string]any{"exp": now.Add(-time.Hour).Unix()})), "expired"},
		"no expiry":      {sign(t, rsaKey, jose.RS256, "r1", claims(map[string]any{"exp": nil})), "expiry"},
		"unknown kid":    {sign(t, stranger, jose.RS256, "r9", claims(nil)), "does not publish"},
		"forged":         {sign(t, stranger, jose.RS256, "r1", claims(nil)), "does not verify"},
		"no user claim":  {sign(t, rsaKey, jose.RS256, "r1", claims(map[string]any{"email": nil})), "email"},
		"hmac":           {signHMAC(t, claims(nil)), "algorithm"},
	} {
		_, err := v.Verify(request("192.0.2.1:5", ""), tc.tok)
		if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The provider rotates: a new key signs, the old one is withdrawn.
	prov.remove("r1")
	rotated := prov.addRSA("r2")
	time.Sleep(5 * time.Millisecond)
	if p, err := v.Verify(request("192.0.2.1:5", ""), sign(t, rotated, jose.RS256, "r2", claims(nil))); err != nil || p.User != "alice@example.com" {
		t.Fatalf("rotated key: %+v %v", p, err)
	}
	// Config mistakes are refused up front.
	for _, cfg := range []JWTConfig{{Audience: "a", JWKSURL: prov.srv.URL}, {Issuer: prov.srv.URL}, {Issuer: "http://example.com", Audience: "a"}} {
		if _, err := New(Config{Methods: []string{MethodJWT}, JWT: cfg}); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

func signHMAC(t *testing.T, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, (&jose.SignerOptions{}).WithHeader("kid", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A proxy's header is honoured only on connections from the trusted
// addresses; from anywhere else it is refused, never believed.
func TestTrustedProxyHeader(t *testing.T) {
	trusted, err := ParsePrefixes([]string{"10.1.0.0/16", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(Config{Methods: []string{MethodProxy}, Proxy: ProxyConfig{Header: "X-Auth-User", Trusted: trusted}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := v.Verify(request("10.1.2.3:4000", "", "X-Auth-User", "alice"), ""); err != nil || p != (Principal{User: "alice", Method: MethodProxy}) {
		t.Fatalf("trusted: %+v %v", p, err)
	}
	if p, err := v.Verify(request("[::ffff:127.0.0.1]:4000", "", "X-Auth-User", "bob"), ""); err != nil || p.User != "bob" {
		t.Fatalf("trusted, IPv4-mapped: %+v %v", p, err)
	}
	for name, r := range map[string]*http.Request{
		"untrusted address":  request("10.2.0.1:4000", "", "X-Auth-User", "alice"),
		"forwarded-for lies": request("192.0.2.9:4000", "", "X-Auth-User", "alice", "X-Forwarded-For", "10.1.2.3"),
		"two headers":        request("10.1.2.3:4000", "", "X-Auth-User", "alice", "X-Auth-User", "bob"),
		"no header":          request("10.1.2.3:4000", ""),
	} {
		if p, err := v.Verify(r, ""); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: %+v %v", name, p, err)
		}
	}
	if _, err := New(Config{Methods: []string{MethodProxy}}); err == nil {
		t.Fatal("a proxy without trusted addresses was accepted")
	}
	if _, err := ParsePrefixes([]string{"not-an-ip"}); err == nil {
		t.Fatal("a bad CIDR was accepted")
	}
}

// A claim in the body stands without verified identity; with one, an
// absent or equal claim gives the verified id and another is refused.
func TestClaim(t *testing.T) {
	alice := Principal{User: "alice", Method: MethodKey}
	for _, tc := range []struct {
		p       Principal
		claimed string
		want    string
		err     error
	}{
		{Principal{}, "bob", "bob", nil},
		{Principal{Method: MethodToken}, "bob", "bob", nil},
		{alice, "", "alice", nil},
		{alice, "alice", "alice", nil},
		{alice, "bob", "", ErrClaim},
	} {
		got, err := Claim(tc.p, tc.claimed)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%+v claims %q: %q %v", tc.p, tc.claimed, got, err)
		}
	}
	if !MayAct(Principal{Method: MethodToken}, "alice") || !MayAct(alice, "alice") || MayAct(alice, "bob") || MayAct(alice, "") {
		t.Fatal("MayAct")
	}
}
