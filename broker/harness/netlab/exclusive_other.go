//go:build !unix

package netlab

import "errors"

// Exclusive is the lock of exclusive.go; a Lab needs a Linux host, so
// where flock is not to be had there is nothing to take it for.
func Exclusive() (release func(), err error) {
	return nil, errors.New("netlab: needs a Unix host")
}
