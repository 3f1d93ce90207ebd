//go:build unix

package grade

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in a process group of its own and makes its
// cancellation kill the whole group, so a checker's children die with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
}

// killGroup kills the process group of cmd's process, if it started.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
