package sessions

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// Every store keeps API keys the same way: put, get, list oldest first,
// delete; a revoked key is gone; bolt keeps them across a reopen.
func TestKeyStoreContract(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ks := open(t).(KeyStore)
			if _, err := ks.GetKey(ctx, "k1"); !errors.Is(err, ErrNoKey) {
				t.Fatalf("empty store: %v", err)
			}
			if list, err := ks.ListKeys(ctx); err != nil || len(list) != 0 {
				t.Fatalf("empty list: %v %v", list, err)
			}
			t0 := time.Unix(1_800_000_000, 0).UTC()
			a := APIKey{ID: "k1", User: "alice", Name: "laptop", Hash: "aa", Created: t0.Add(time.Second), Role: "operator", Expires: t0.Add(time.Hour)}
			b := APIKey{ID: "k2", User: "bob", Hash: "bb", Created: t0}
			for _, k := range []APIKey{a, b} {
				if err := ks.PutKey(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := ks.GetKey(ctx, "k1"); err != nil || got != a {
				t.Fatalf("get: %+v %v", got, err)
			}
			if list, err := ks.ListKeys(ctx); err != nil || len(list) != 2 || list[0] != b || list[1] != a {
				t.Fatalf("list: %+v %v", list, err)
			}
			// A use is recorded on the key, and never rewrites the rest.
			used := t0.Add(time.Minute)
			if err := ks.TouchKey(ctx, "k1", used); err != nil {
				t.Fatal(err)
			}
			want := a
			want.LastUsed = used
			if got, err := ks.GetKey(ctx, "k1"); err != nil || got != want {
				t.Fatalf("after a use: %+v %v", got, err)
			}
			if list, err := ks.ListKeys(ctx); err != nil || len(list) != 2 || list[1] != want {
				t.Fatalf("list after a use: %+v %v", list, err)
			}
			if err := ks.DeleteKey(ctx, "k1"); err != nil {
				t.Fatal(err)
			}
			// A use racing the revocation brings nothing back.
			if err := ks.TouchKey(ctx, "k1", used); !errors.Is(err, ErrNoKey) {
				t.Fatalf("touching a revoked key: %v", err)
			}
			if err := ks.DeleteKey(ctx, "k1"); !errors.Is(err, ErrNoKey) {
				t.Fatalf("second delete: %v", err)
			}
			if _, err := ks.GetKey(ctx, "k1"); !errors.Is(err, ErrNoKey) {
				t.Fatalf("revoked key: %v", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutKey(t.Context(), APIKey{ID: "k", User: "alice", Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = OpenBolt(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if k, err := s.GetKey(t.Context(), "k"); err != nil || k.User != "alice" {
		t.Fatalf("after a reopen: %+v %v", k, err)
	}
}
