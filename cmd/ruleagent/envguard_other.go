//go:build !linux

package main

// guardEnvironment is Linux-only: elsewhere /proc/<pid>/environ does not
// exist in this form.
func guardEnvironment() {}
