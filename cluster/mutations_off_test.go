//go:build !mutations

package cluster

import "errors"

func mutate(*Settings, string) error {
	return errors.New("mutations exist only in a build with the mutations tag")
}
