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

// NewKey makes an API key for user: the key to hand over (shown once,
// never stored) and the record to store.
func NewKey(user, name string, now time.Time) (string, sessions.APIKey, error) {
	if err := CheckUser(user); err != nil {
		return "", sessions.APIKey{}, err
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
	rec := sessions.APIKey{ID: hex.EncodeToString(id[:]), User: user, Name: name, Hash: hashSecret(s), Created: now.UTC()}
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

// keyVerifier knows callers by their API keys.
type keyVerifier struct{ store sessions.KeyStore }

func (k keyVerifier) verify(ctx context.Context, key string) (Principal, error) {
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
	return Principal{User: rec.User, Method: MethodKey, KeyID: rec.ID}, nil
}
