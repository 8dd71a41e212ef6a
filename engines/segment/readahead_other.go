//go:build !linux

package segment

import "github.com/cockroachdb/pebble/v2/vfs"

// willNeed does nothing here: readahead hints are Linux's posix_fadvise.
func willNeed(vfs.File, int64, int64) (bool, error) { return false, nil }

// startWriteback does nothing here: writeback hints are Linux's
// sync_file_range.
func startWriteback(vfs.File, int64, int64) error { return nil }
