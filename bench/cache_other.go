//go:build !linux

package bench

import "errors"

var errNoCacheControl = errors.New("bench: page-cache control needs Linux")

// EvictCache is Linux-only; elsewhere reads stay warm.
func EvictCache(string) (method string, resident float64, err error) {
	return "", 1, errNoCacheControl
}

// Resident is Linux-only.
func Resident(string) (float64, error) { return 1, errNoCacheControl }

// CacheControl says why reads stay warm here.
func CacheControl() string { return "none: " + errNoCacheControl.Error() }
