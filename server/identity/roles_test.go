package identity

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/ruleagent/ruleagent/sessions"
)

// Operators are the --token, every caller of a server that verifies
// nobody, and a verified user granted RoleOperator; a verified user is
// not one, and acts on its own runs only.
func TestOperator(t *testing.T) {
	alice := Principal{User: "alice", Method: MethodKey}
	root := Principal{User: "root", Method: MethodJWT, Role: RoleOperator}
	for _, tc := range []struct {
		p    Principal
		want bool
	}{
		{Principal{}, true},
		{Principal{Method: MethodToken}, true},
		{alice, false},
		{root, true},
	} {
		if got := tc.p.Operator(); got != tc.want {
			t.Errorf("%+v: Operator() = %v", tc.p, got)
		}
		err := RequireOperator(tc.p, "deploying a chain")
		if (err == nil) != tc.want || err != nil && !errors.Is(err, ErrNotOperator) {
			t.Errorf("%+v: RequireOperator: %v", tc.p, err)
		}
	}
	if err := RequireOperator(alice, "deploying a chain"); !strings.Contains(err.Error(), "--role operator") || !strings.Contains(err.Error(), `"alice"`) {
		t.Fatalf("the refusal does not say how: %v", err)
	}
	if !MayAct(root, "alice") || MayAct(alice, "root") {
		t.Fatal("an operator acts on every run, a user on its own")
	}
	// An operator's runs are still its own: its body claims no one else.
	if _, err := Claim(root, "alice"); !errors.Is(err, ErrClaim) {
		t.Fatalf("an operator-role user named another user: %v", err)
	}
}

// countingKeys counts the writes of last uses.
type countingKeys struct {
	*sessions.Memory
	mu      sync.Mutex
	touches int
}

func (c *countingKeys) TouchKey(ctx context.Context, id string, at time.Time) error {
	c.mu.Lock()
	c.touches++
	c.mu.Unlock()
	return c.Memory.TouchKey(ctx, id, at)
}

// API keys may expire and grant the operator role; a key past its expiry
// is refused saying so; a use is recorded at most once a minute per key.
func TestAPIKeyExpiryRoleAndLastUse(t *testing.T) {
	store := &countingKeys{Memory: sessions.NewMemory()}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	v, err := New(Config{Methods: []string{MethodKey}, Keys: store, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	key, rec, err := IssueKey(KeySpec{User: "ops", Role: RoleOperator, Expires: now.Add(30 * 24 * time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.PutKey(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(request("192.0.2.1:5", ""), key)
	if err != nil || p != (Principal{User: "ops", Method: MethodKey, KeyID: rec.ID, Role: RoleOperator}) {
		t.Fatalf("verify: %+v %v", p, err)
	}
	if got, _ := store.GetKey(t.Context(), rec.ID); !got.LastUsed.Equal(now) {
		t.Fatalf("last used %v, want %v", got.LastUsed, now)
	}
	// Many uses within the minute write once.
	for range 50 {
		now = now.Add(time.Second)
		if _, err := v.Verify(request("192.0.2.1:5", ""), key); err != nil {
			t.Fatal(err)
		}
	}
	if store.touches != 1 {
		t.Fatalf("%d writes for 51 uses in a minute, want 1", store.touches)
	}
	now = now.Add(time.Minute)
	if _, err := v.Verify(request("192.0.2.1:5", ""), key); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.GetKey(t.Context(), rec.ID); store.touches != 2 || !got.LastUsed.Equal(now) {
		t.Fatalf("after a minute: %d writes, last used %v", store.touches, got.LastUsed)
	}
	// Past its expiry the key is refused, saying when it expired.
	now = rec.Expires
	_, err = v.Verify(request("192.0.2.1:5", ""), key)
	if !errors.Is(err, ErrUnauthenticated) || !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "expired at 2026-12-27T10:00:00Z") {
		t.Fatalf("expired key: %v", err)
	}
	// Mistakes are refused when the key is made.
	if _, _, err := IssueKey(KeySpec{User: "a", Role: "admin"}, now); !errors.Is(err, ErrBadRole) {
		t.Fatalf("unknown role: %v", err)
	}
	if _, _, err := IssueKey(KeySpec{User: "a", Expires: now.Add(-time.Second)}, now); !errors.Is(err, ErrBadExpiry) {
		t.Fatalf("expiry in the past: %v", err)
	}
	// A stored key naming a role this server does not know grants nothing.
	odd, oddRec, _ := NewKey("mallory", "", now)
	oddRec.Role = "superuser"
	if err := store.PutKey(t.Context(), oddRec); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(request("192.0.2.1:5", ""), odd); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("unknown stored role: %v", err)
	}
}

// A JWT grants the operator role when its role claim (an array, or a
// string of values) holds ruleagent:operator; a proxy through its role
// header, from a trusted address only.
func TestRoleClaims(t *testing.T) {
	prov := newProvider(t)
	k := prov.addRSA("r1")
	v, err := New(Config{Methods: []string{MethodJWT}, JWT: JWTConfig{Issuer: prov.srv.URL, Audience: "ruleagent", RoleClaim: "roles"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := func(roles any) string {
		c := map[string]any{"iss": prov.srv.URL, "aud": "ruleagent", "sub": "alice", "exp": now.Add(time.Hour).Unix()}
		if roles != nil {
			c["roles"] = roles
		}
		return sign(t, k, jose.RS256, "r1", c)
	}
	for _, tc := range []struct {
		roles any
		want  string
	}{
		{[]string{"reader", OperatorClaim}, RoleOperator},
		{"reader " + OperatorClaim, RoleOperator},
		{"reader," + OperatorClaim, RoleOperator},
		{[]string{"reader"}, ""},
		{"ruleagent:operators", ""},
		{map[string]any{OperatorClaim: true}, ""},
		{nil, ""},
	} {
		p, err := v.Verify(request("192.0.2.1:5", ""), tok(tc.roles))
		if err != nil || p.User != "alice" || p.Role != tc.want {
			t.Errorf("roles %v: %+v %v", tc.roles, p, err)
		}
	}
	// Without --jwt-role-claim, no claim grants anything.
	plain, err := New(Config{Methods: []string{MethodJWT}, JWT: JWTConfig{Issuer: prov.srv.URL, Audience: "ruleagent"}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := plain.Verify(request("192.0.2.1:5", ""), tok([]string{OperatorClaim})); err != nil || p.Role != "" {
		t.Fatalf("no role claim configured: %+v %v", p, err)
	}

	trusted, _ := ParsePrefixes([]string{"10.1.0.0/16"})
	pv, err := New(Config{Methods: []string{MethodProxy}, Proxy: ProxyConfig{Trusted: trusted, RoleHeader: "X-Forwarded-Groups"}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := pv.Verify(request("10.1.2.3:4000", "", "X-Forwarded-User", "bob", "X-Forwarded-Groups", "staff, "+OperatorClaim), ""); err != nil || p.Role != RoleOperator {
		t.Fatalf("proxy role: %+v %v", p, err)
	}
	if p, err := pv.Verify(request("10.1.2.3:4000", "", "X-Forwarded-User", "bob", "X-Forwarded-Groups", "staff"), ""); err != nil || p.Role != "" {
		t.Fatalf("proxy without the role: %+v %v", p, err)
	}
	if _, err := pv.Verify(request("192.0.2.9:4000", "", "X-Forwarded-User", "bob", "X-Forwarded-Groups", OperatorClaim), ""); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("an untrusted address granted itself the role: %v", err)
	}
}
