package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/ruleagent/ruleagent/sessions"
)

// KeyPrefix starts every API key: `rak_<id>_<secret>`. The id names the
// key in lists and revocations; only the secret's SHA-256 is stored. A
// 256-bit random secret needs no slow hash: it cannot be guessed.
const KeyPrefix = "rak_"

// MaxUserLen bounds a user id.
const MaxUserLen = 256

// ErrBadUser refuses a user id that is empty, too long, or holds control
// characters.
var ErrBadUser = errors.New("a user id must be 1 to 256 printable characters")

// CheckUser refuses user ids that could not be shown or compared safely.
func CheckUser(user string) error {
	if user == "" || len(user) > MaxUserLen || strings.TrimSpace(user) != user ||
		strings.IndexFunc(user, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("%w: %q", ErrBadUser, user)
	}
	return nil
}

// NewKey makes an API key for user that never expires and grants no
// role: see IssueKey.
func NewKey(user, name string, now time.Time) (string, sessions.APIKey, error) {
	return IssueKey(KeySpec{User: user, Name: name}, now)
}

// KeySpec is what an API key is for.
type KeySpec struct {
	User string
	// Name is a note on what the key is for.
	Name string
	// Role is granted to the key's requests: RoleOperator or none.
	Role string
	// Expires, when set, is when the key stops working (after now).
	Expires time.Time
}

// IssueKey makes an API key as spec says: the key to hand over (shown
// once, never stored) and the record to store.
func IssueKey(spec KeySpec, now time.Time) (string, sessions.APIKey, error) {
	user, name := spec.User, spec.Name
	if err := CheckUser(user); err != nil {
		return "", sessions.APIKey{}, err
	}
	if err := CheckRole(spec.Role); err != nil {
		return "", sessions.APIKey{}, err
	}
	if !spec.Expires.IsZero() && !spec.Expires.After(now) {
		return "", sessions.APIKey{}, fmt.Errorf("%w: %s is not after now", ErrBadExpiry, spec.Expires.UTC().Format(time.RFC3339))
	}
	var id [8]byte
	var secret [32]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", sessions.APIKey{}, err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", sessions.APIKey{}, err
	}
	s := base64.RawURLEncoding.EncodeToString(secret[:])
	rec := sessions.APIKey{ID: hex.EncodeToString(id[:]), User: user, Name: name, Hash: hashSecret(s), Created: now.UTC(),
		Role: spec.Role}
	if !spec.Expires.IsZero() {
		rec.Expires = spec.Expires.UTC()
	}
	return KeyPrefix + rec.ID + "_" + s, rec, nil
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// parseKey splits an API key into its id and secret.
func parseKey(key string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	return id, secret, ok && len(id) == 16 && secret != ""
}

// ErrBadExpiry refuses a key whose expiry is not in the future.
var ErrBadExpiry = errors.New("an API key's expiry must be in the future")

// ErrExpired refuses a credential past its expiry (an API key made with
// an expiry, a JWT past its exp).
var ErrExpired = errors.New("the credential has expired")

// touchEvery is how often a key's last use is written: at most once a
// minute per key, so that a busy key costs no write per request.
const touchEvery = time.Minute

// keyVerifier knows callers by their API keys, and records when each
// was last used.
type keyVerifier struct {
	store sessions.KeyStore
	now   func() time.Time

	mu      sync.Mutex
	touched map[string]time.Time // key id -> when its last use was written
}

func newKeyVerifier(store sessions.KeyStore, now func() time.Time) *keyVerifier {
	if now == nil {
		now = time.Now
	}
	return &keyVerifier{store: store, now: now, touched: map[string]time.Time{}}
}

// touch records that key id was used at now, unless it was written less
// than touchEvery ago (by this process). A failed write is not the
// request's concern: the key verified.
func (k *keyVerifier) touch(ctx context.Context, id string, now time.Time) {
	k.mu.Lock()
	if last, ok := k.touched[id]; ok && now.Sub(last) < touchEvery {
		k.mu.Unlock()
		return
	}
	if len(k.touched) >= maxTouched {
		clear(k.touched)
	}
	k.touched[id] = now
	k.mu.Unlock()
	_ = k.store.TouchKey(ctx, id, now.UTC())
}

// maxTouched bounds the remembered writes (one per key in use).
const maxTouched = 1 << 14

func (k *keyVerifier) verify(ctx context.Context, key string) (Principal, error) {
	id, secret, ok := parseKey(key)
	if !ok {
		return Principal{}, fmt.Errorf("%w: the API key is malformed", ErrUnauthenticated)
	}
	rec, err := k.store.GetKey(ctx, id)
	if errors.Is(err, sessions.ErrNoKey) {
		return Principal{}, fmt.Errorf("%w: API key %s is unknown or revoked", ErrUnauthenticated, id)
	}
	if err != nil {
		// A store that fails refuses: a key never verifies by accident.
		return Principal{}, fmt.Errorf("%w: the key store failed: %v", ErrUnauthenticated, err)
	}
	if subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(rec.Hash)) != 1 {
		return Principal{}, fmt.Errorf("%w: API key %s does not match", ErrUnauthenticated, id)
	}
	now := k.now()
	if !rec.Expires.IsZero() && !now.Before(rec.Expires) {
		return Principal{}, fmt.Errorf("%w: %w: API key %s expired at %s: ask the operator for a new one", ErrUnauthenticated, ErrExpired,
			id, rec.Expires.UTC().Format(time.RFC3339))
	}
	if err := CheckRole(rec.Role); err != nil {
		// A role this server does not know grants nothing, and a key
		// that claims one is refused rather than taken as a user's.
		return Principal{}, fmt.Errorf("%w: API key %s: %v", ErrUnauthenticated, id, err)
	}
	k.touch(ctx, rec.ID, now)
	return Principal{User: rec.User, Method: MethodKey, KeyID: rec.ID, Role: rec.Role}, nil
}
