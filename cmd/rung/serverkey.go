package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// minKeyBytes is the shortest server key accepted.
const minKeyBytes = 32

// loadServerKey reads the server's secret key from path, making one (32
// random bytes, mode 0600, written whole or not at all) when there is no
// file. A key shorter than minKeyBytes, or readable by others, is an
// error: it seals tenants' secrets.
func loadServerKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, minKeyBytes)
		rand.Read(key)
		tmp, err := os.CreateTemp(filepath.Dir(path), ".server.key-*")
		if err != nil {
			return nil, fmt.Errorf("server key: %w", err)
		}
		defer os.Remove(tmp.Name())
		if _, err := tmp.Write(key); err != nil {
			tmp.Close()
			return nil, fmt.Errorf("server key: %w", err)
		}
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return nil, fmt.Errorf("server key: %w", err)
		}
		tmp.Close()
		// A link, not a rename: two daemons starting at once on one data
		// directory agree on the first key written.
		if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("server key: %w", err)
		}
		return loadServerKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("server key %s is readable by others (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	if len(key) < minKeyBytes {
		return nil, fmt.Errorf("server key %s holds %d bytes, want at least %d", path, len(key), minKeyBytes)
	}
	return key, nil
}
