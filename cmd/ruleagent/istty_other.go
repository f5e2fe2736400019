//go:build !linux

package main

import "os"

// isTerminal reports whether w is a character device (a terminal, or
// /dev/null).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
