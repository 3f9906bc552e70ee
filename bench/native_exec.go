package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// nativeCmd is one command of a native build, an argv; it names its
// directories itself (make -C, ninja -C, cmake -S and -B), so it runs
// anywhere.
type nativeCmd struct {
	Args []string
}

// String returns the command as a shell line.
func (c nativeCmd) String() string { return shellJoin(c.Args) }

// nativeEnv returns this process's environment for a native build, less
// what would change the build under test: numasteal's own variables
// (NUMASTEAL_SLOT from an enclosing launch, NUMASTEAL_LAUNCH=off, a
// socket of the user's daemon) and make's (the jobserver and flags of an
// enclosing make), with extra added.
func nativeEnv(environ, extra []string) []string {
	out := make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "NUMASTEAL_") || k == "MAKEFLAGS" || k == "MFLAGS" || k == "MAKELEVEL" || k == "MAKE_TERMOUT" || k == "MAKE_TERMERR" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// stopGrace is how long a build tool has to end its jobs and exit after
// SIGTERM before its process group is killed.
const stopGrace = 5 * time.Second

// command returns c as an exec.Cmd in a process group of its own (see
// waitGroup), stopped when ctx is done, its output kept in out.
//
// Stopping is SIGTERM to the group, then SIGKILL. The group holds make,
// its jobs, their launchers and compilers (make runs its jobs in its own
// group, and a launcher runs its command in the launcher's), so SIGTERM
// reaches them all and make waits for its jobs before it exits. Ninja
// gives every job a group of its own, which a signal to ninja's group
// misses: ninja itself passes SIGTERM to each job's group and waits for
// them, so no launcher is left to reconnect to a daemon after the run.
// A tool that has not exited stopGrace after SIGTERM is killed, and
// waitGroup kills what is left of its group.
func (c nativeCmd) command(ctx context.Context, extraEnv []string, out *tailBuffer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Env = nativeEnv(os.Environ(), extraEnv)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	return cmd
}

// waitGroup waits for cmd (started by command) and then kills whatever
// is left in its process group: nothing after a build that ended by
// itself, the stragglers of one stopped. The group's id cannot name
// another group meanwhile: an id is not reused while a process of the
// group lives, and an empty group's id would have to be handed to a new
// process that makes it its own group, in the moment after the reap.
func waitGroup(cmd *exec.Cmd) error {
	err := cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return err
}

// run runs c to its end, untimed (a clean, a configure step).
func (c nativeCmd) run(ctx context.Context, extraEnv []string) error {
	var out tailBuffer
	cmd := c.command(ctx, extraEnv, &out)
	err := cmd.Start()
	if err == nil {
		err = waitGroup(cmd)
	}
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", c, err, out.String())
	}
	return nil
}

// runTogether starts cmds at once and waits for all of them: the wall
// time until the last one ended, and the user and system time of all
// their process trees (wait4's rusage), summed. When one fails the others
// are killed.
func runTogether(ctx context.Context, cmds []nativeCmd, extraEnv []string) (buildMeasure, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		i   int
		err error
		ru  *syscall.Rusage
	}
	outs := make([]tailBuffer, len(cmds))
	execs := make([]*exec.Cmd, len(cmds))
	for i, c := range cmds {
		execs[i] = c.command(ctx, extraEnv, &outs[i])
	}
	done := make(chan result, len(cmds))
	start := time.Now()
	for i, cmd := range execs {
		if err := cmd.Start(); err != nil {
			done <- result{i: i, err: err}
			continue
		}
		go func() {
			err := waitGroup(cmd)
			var ru *syscall.Rusage
			if cmd.ProcessState != nil {
				ru, _ = cmd.ProcessState.SysUsage().(*syscall.Rusage)
			}
			done <- result{i, err, ru}
		}()
	}
	var m buildMeasure
	var first error
	for range execs {
		r := <-done
		if r.err != nil && first == nil {
			first = fmt.Errorf("%s: %w\n%s", cmds[r.i], r.err, outs[r.i].String())
			cancel()
		}
		if r.ru != nil {
			m.user += float64(r.ru.Utime.Nano()) / 1e9
			m.sys += float64(r.ru.Stime.Nano()) / 1e9
		}
	}
	m.elapsed = time.Since(start).Seconds()
	if first != nil {
		return buildMeasure{}, first
	}
	return m, nil
}
