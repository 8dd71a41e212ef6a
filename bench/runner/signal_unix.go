//go:build unix

package runner

import "syscall"

// The signals that freeze and thaw a broker (hitFreeze).
const sigStop, sigCont = syscall.SIGSTOP, syscall.SIGCONT

func kill(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
