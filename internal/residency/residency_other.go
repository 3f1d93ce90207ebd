//go:build !linux

package residency

// DropUntouched does nothing here: it knows only Linux's /proc.
func DropUntouched() (int64, error) { return 0, nil }
