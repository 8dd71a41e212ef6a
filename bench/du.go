package bench

import (
	"fmt"
	"io/fs"
	"path/filepath"
)

// Usage is how much a directory occupies.
type Usage struct {
	// Apparent is the sum of file sizes.
	Apparent int64 `json:"apparent_bytes"`
	// Allocated is what the filesystem reserved for them (st_blocks), which
	// counts preallocation and excludes holes: the figure for "bytes on disk".
	Allocated int64 `json:"allocated_bytes"`
	Files     int   `json:"files"`
}

// DirUsage adds up the regular files under dir.
func DirUsage(dir string) (Usage, error) {
	var u Usage
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		u.Files++
		u.Apparent += info.Size()
		u.Allocated += allocatedBytes(info)
		return nil
	})
	if err != nil {
		return Usage{}, fmt.Errorf("bench: usage of %s: %w", dir, err)
	}
	return u, nil
}
