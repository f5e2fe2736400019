//go:build !linux

package main

import "testing"

// refusingAddr is a loopback address nothing listens on: port 1, which no
// test binds and no ephemeral port allocation hands out.
func refusingAddr(*testing.T) string { return "127.0.0.1:1" }
