//go:build !linux

package bench

import "os"

// Datasync flushes f to the device (fsync where fdatasync is missing).
func Datasync(f *os.File) error { return f.Sync() }

// SyncFS does nothing where syncfs(2) is missing.
func SyncFS(dir string) error { return nil }
