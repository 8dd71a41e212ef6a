//go:build !unix

package main

import "time"

// cpuTime is not measured here: the summary's CPU figures read 0.
func cpuTime() time.Duration { return 0 }
