//go:build unix

package partition

import "syscall"

func ftruncate(fd uintptr, size int64) error { return syscall.Ftruncate(int(fd), size) }
