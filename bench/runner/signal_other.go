//go:build !unix

package runner

import (
	"fmt"
	"os"
	"syscall"
)

// There is no freezing a process here: a workload that freezes a broker
// fails with the error of kill.
const sigStop, sigCont = syscall.Signal(-1), syscall.Signal(-2)

// kill sends sig to pid where only SIGKILL can be sent.
func kill(pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return fmt.Errorf("signal %d: only kill -9 is supported on this OS", int(sig))
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
