//go:build !linux

package bench

import "fmt"

func deviceOf(dir string) (major, minor uint32, err error) {
	return 0, 0, fmt.Errorf("%w: %s (not Linux)", ErrNoDevice, dir)
}

func sysBlockNames(string) (device, disk, diskDir string) { return "", "", "" }

func diskInfo(string) DiskInfo { return DiskInfo{} }
