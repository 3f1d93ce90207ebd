package batch

import (
	"errors"
	"os"

	"github.com/detourhq/detour/internal/durable"
)

// lockFile takes an exclusive lock on f without waiting: ErrLocked when
// another run holds it.
func lockFile(f *os.File) error {
	if err := durable.TryLock(f); errors.Is(err, durable.ErrHeld) {
		return ErrLocked
	} else if err != nil {
		return err
	}
	return nil
}
