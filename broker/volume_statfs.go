//go:build linux || darwin

package broker

import "syscall"

// volumeBytes is the size of the file system holding dir and the bytes an
// unprivileged writer may still use on it (statfs), -1 each when it cannot
// be read (a directory on an in-memory file system).
func volumeBytes(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	bsize := int64(st.Bsize) // uint32 on darwin
	return int64(st.Blocks) * bsize, int64(st.Bavail) * bsize
}
