//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package durable

import "os"

// TryLock does nothing on this system: nothing stops two processes from
// writing one file at once.
func TryLock(*os.File) error { return nil }
