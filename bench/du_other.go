//go:build !unix

package bench

import "io/fs"

func allocatedBytes(info fs.FileInfo) int64 { return info.Size() }
