// Package chainsync keeps every replica's deployed chains equal to one
// versioned store of chains: a deploy on any replica reaches every other
// within a second, a replica that missed changes (it was down, its Redis
// connection flapped) catches up from the store before it says it is
// ready, and a chain that a replica could not deploy is reported by its
// health, never silently different.
//
// A Store holds each chain's DSL with a version (it grows with each
// change of that chain) and its hash, and a feed of changes numbered by a
// store-wide revision (Rev). A Syncer on each replica lists the store,
// applies what differs from what it runs (Applier: the server's deploy),
// then follows the feed; a gap in the revisions, or any error of the feed,
// makes it list and reconcile again.
//
// Two stores (contract_test.go runs one table against both):
//
//   - Folder: the chains folder of one machine, the source there as
//     today. Versions count the changes seen since the process started;
//     changes are the store's own writes and the files edited by hand
//     (fsnotify, after they settle).
//   - Redis: the source of truth of a fleet. A deleted chain leaves a
//     tombstone (a version with Deleted set), so that a replica's folder,
//     used as a seed at start (Seed: what the store lacks is added; what
//     it has or deleted is left alone), never brings back a chain the
//     fleet deleted nor overwrites a newer one. In a fleet, chains change
//     through the API (any replica): the folder is a seed, not a source,
//     and the server should not watch it.
//
// What the server does with it (the integration): its chain API's PUT and
// DELETE validate as today, then Put/Delete the store (the expected
// version gives optimistic concurrency to the editor); deploying happens
// in the Syncer's Apply on every replica, the writing one included; the
// chains listing adds each chain's version and whether it is applied
// here; /readyz includes the Syncer's probe (caught up, nothing failed).
package chainsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"iter"
	"time"
)

// Chain is a stored chain.
type Chain struct {
	ID      string `json:"id"`
	Version int64  `json:"version"`
	// Hash is the SHA-256 of DSL (hex): two replicas run the same chain
	// when their hashes agree.
	Hash string `json:"hash"`
	DSL  []byte `json:"-"`
	// Deleted marks a tombstone.
	Deleted   bool      `json:"deleted,omitempty"`
	UpdatedBy string    `json:"updatedBy,omitempty"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
}

// Change is one entry of the feed.
type Change struct {
	// Rev numbers the store's changes: 1, 2, 3 ... A follower that sees
	// a Rev other than the one after its last has missed changes.
	Rev     int64  `json:"rev"`
	ID      string `json:"id"`
	Version int64  `json:"version"`
	Hash    string `json:"hash,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
}

// Store is a versioned store of chains. Implementations are safe for
// concurrent use.
type Store interface {
	// Put stores dsl as chain id. expect is the version the caller read:
	// AnyVersion to overwrite whatever is there, 0 for a chain that must
	// not exist (a tombstone counts as existing). Another version is
	// ErrConflict. DSL equal to the stored one changes nothing and returns
	// the stored chain.
	Put(ctx context.Context, id string, dsl []byte, expect int64, by string) (Chain, error)
	// Delete leaves a tombstone of chain id (ErrNotFound when it does not
	// exist); expect as for Put.
	Delete(ctx context.Context, id string, expect int64, by string) error
	// Get returns chain id (a tombstone too); ErrNotFound when none.
	Get(ctx context.Context, id string) (Chain, error)
	// List returns every chain, tombstones included, with their DSL.
	List(ctx context.Context) ([]Chain, error)
	// Rev is the revision of the store's last change.
	Rev(ctx context.Context) (int64, error)
	// Changes yields the changes after revision after, as they come,
	// until ctx ends (its error is yielded) or the feed fails (its error
	// is yielded, then it returns).
	Changes(ctx context.Context, after int64) iter.Seq2[Change, error]
}

// AnyVersion makes Put and Delete overwrite whatever version is stored.
const AnyVersion = -1

// Errors of stores.
var (
	ErrNotFound = errors.New("no such chain")
	ErrConflict = errors.New("the chain changed since it was read")
)

// Hash returns the hash of chain DSL.
func Hash(dsl []byte) string {
	h := sha256.Sum256(dsl)
	return hex.EncodeToString(h[:])
}

// ChainID reads ruleChain.id from chain DSL ("" when it has none).
func ChainID(dsl []byte) (string, error) {
	var head struct {
		RuleChain struct {
			ID string `json:"id"`
		} `json:"ruleChain"`
	}
	if err := json.Unmarshal(dsl, &head); err != nil {
		return "", err
	}
	return head.RuleChain.ID, nil
}

// Seed adds to dst the chains of src that dst has never had (no chain
// and no tombstone of that id): a replica's folder seeding a fleet's
// store. It returns the ids it added.
func Seed(ctx context.Context, dst, src Store, by string) ([]string, error) {
	chains, err := src.List(ctx)
	if err != nil {
		return nil, err
	}
	var added []string
	for _, c := range chains {
		if c.Deleted {
			continue
		}
		_, err := dst.Put(ctx, c.ID, c.DSL, 0, by)
		switch {
		case errors.Is(err, ErrConflict):
		case err != nil:
			return added, err
		default:
			added = append(added, c.ID)
		}
	}
	return added, nil
}
