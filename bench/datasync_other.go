//go:build !linux

package bench

import "os"

// Datasync flushes f to the device (fsync where fdatasync is missing).
func Datasync(f *os.File) error { return f.Sync() }

// Preallocate does nothing where fallocate(2) is missing.
func Preallocate(*os.File, int64, int64) error { return nil }
