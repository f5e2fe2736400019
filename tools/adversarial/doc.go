// Package adversarial holds only the cross-tool adversarial security suite:
// tests that drive the built-in tools through their registered factories,
// against a real temporary filesystem, with hostile inputs (path escapes,
// symlink and hard-link tricks, denied sub-paths, forged session keys, ...)
// and check that each is refused with the right error kind and that nothing
// outside the workspace is read or changed. It has no non-test code.
package adversarial
