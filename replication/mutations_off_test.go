//go:build !mutations

package replication

import "errors"

func setMutation(*mutations, string) error {
	return errors.New("mutations exist only in a build with the mutations tag")
}
