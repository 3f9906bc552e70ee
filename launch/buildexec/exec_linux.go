//go:build linux

package buildexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/jobserver"
	"github.com/numasteal/numasteal/launch"
)

// Exec asks the daemon for a jobserver and execs cfg.Args with it. It
// returns only when something failed before the exec, with an error
// that says what; nothing has run then.
func Exec(cfg Config) error {
	if len(cfg.Args) == 0 {
		return errors.New("no command given")
	}
	getenv, environ := cfg.Getenv, cfg.Environ
	if getenv == nil {
		getenv = os.Getenv
	}
	if environ == nil {
		environ = os.Environ
	}
	path, err := exec.LookPath(cfg.Args[0])
	if err != nil {
		return err
	}
	cl := launch.ClientFromEnv(getenv, cfg.Serve)
	if err := cl.Paths.Ensure(); err != nil {
		return err
	}
	conn, err := cl.Connect()
	if err != nil {
		return err
	}
	defer conn.Close()
	name := filepath.Base(cfg.Args[0])
	if err := conn.Send(launch.NewMsg("jobserver", "name", name)); err != nil {
		return fmt.Errorf("asking the daemon for a jobserver: %w", err)
	}
	reply, fds, err := conn.ReadRights()
	if err != nil {
		return fmt.Errorf("asking the daemon for a jobserver: %w", err)
	}
	if reply.Verb == "error" {
		msg, _ := reply.Get("msg")
		if code, _ := reply.Get("code"); code == "verb" {
			msg = "the running daemon has no jobserver (an older numasteal): stop it (numasteal status shows its pid) and try again"
		}
		return fmt.Errorf("the daemon refused a jobserver: %s", msg)
	}
	slots, _ := reply.Int("slots")
	if reply.Verb != "jobserver" || len(fds) != 2 || slots < 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("%w: jobserver reply %q with %d descriptors", launch.ErrMalformed, reply.String(), len(fds))
	}
	for _, fd := range fds {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return fmt.Errorf("passing the jobserver on: %w", err)
		}
	}
	auth := strconv.Itoa(fds[0]) + "," + strconv.Itoa(fds[1])
	// The build is this process: a $NUMASTEAL_BUILD would name another,
	// whose launchers the jobserver's tokens would not cover.
	env := slices.DeleteFunc(environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "NUMASTEAL_BUILD=")
	})
	env = append(env, "MAKEFLAGS="+jobserver.MergeMakeflags(getenv("MAKEFLAGS"), int(slots), auth))
	args := cfg.Args
	if isMake(name) {
		args = DropJobs(args)
	}
	conn.Close()
	err = launch.Exec(path, args, env)
	return fmt.Errorf("exec %s: %w", path, err)
}
