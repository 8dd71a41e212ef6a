//go:build !unix

package partition

import "errors"

func ftruncate(uintptr, int64) error { return errors.ErrUnsupported }
