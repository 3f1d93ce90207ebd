package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// DefaultReadTimeout is how long Reopen waits for the config file's bytes
// when its caller gives no timeout. A real detour.yaml is a few KiB on a
// local disk and reads in microseconds; 5 s leaves room for a slow network
// filesystem, and is short enough that a reload which cannot read its file
// says so while the operator still watches.
const DefaultReadTimeout = 5 * time.Second

// ErrNotRegular means the config path names something other than a
// regular file once links are followed: a FIFO, a socket, a device or a
// directory. Reopen refuses it unread.
var ErrNotRegular = errors.New("config is not a regular file")

// ErrReadTimeout means the config file's bytes did not come within the
// timeout of Reopen.
var ErrReadTimeout = errors.New("config file not read in time")

// Reopen is Open for a process already running on a config (a reload): it
// finds the file as Open does, but reads only a regular file (after links
// are followed; a FIFO, device or directory is refused unread with
// ErrNotRegular) and gives up after timeout (0 means DefaultReadTimeout)
// with ErrReadTimeout. So a FIFO put at the config path, or a file on a
// hung mount, never blocks a reload, or the reloads after it: the caller
// keeps the config it has and learns why. A read that timed out may go on
// in the background until the filesystem answers; its result is dropped.
func Reopen(flag string, getenv func(string) string, timeout time.Duration) (*Config, error) {
	p := Path(flag, getenv)
	if p == "" {
		return Default(getenv)
	}
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	data, err := readWithin(p, timeout, openRegular)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(p, data)
}

// openRegular opens path for reading only when it is a regular file, by
// its mode before the open (os.Stat follows links) and again after it, on
// the file opened: a FIFO swapped in between is opened without blocking
// (O_NONBLOCK) and refused.
func openRegular(path string) (io.ReadCloser, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err == nil && !st.Mode().IsRegular() {
		err = notRegular(path, st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// notRegular returns the ErrNotRegular of path, whose mode is m.
func notRegular(path string, m fs.FileMode) error {
	what := "not a regular file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s, not a regular file (%w): a reload reads a regular file only, since anything else "+
		"could block it; write the config to a file, the safe way: to a temporary file beside it, then rename it over %s",
		path, what, ErrNotRegular, path)
}

// readWithin reads at most MaxFileSize+1 bytes of what open(path) gives,
// and gives up after timeout with ErrReadTimeout.
func readWithin(path string, timeout time.Duration, open func(string) (io.ReadCloser, error)) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1) // the reader never waits for a caller gone
	go func() {
		f, err := open(path)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
		done <- result{data, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.data, r.err
	case <-timer.C:
		return nil, fmt.Errorf("%s: nothing read within %s (%w): check the disk or mount it is on", path, timeout, ErrReadTimeout)
	}
}
