package launch

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forwarder passes the ending signals the launcher receives to the
// command it runs as its child. They are caught from before the first
// fork, so that none arriving just after it kills the launcher and leaves
// the command to Pdeathsig's SIGKILL, and are never released: the
// launcher ends with its commands. os/signal registers each signal with a
// round trip to its own locked thread, so a launcher that hands its
// command off (exec) never registers any, and one that forks registers
// them once whatever number of times it runs the command.
type forwarder struct {
	in   inherited
	once sync.Once
	ch   chan os.Signal

	mu        sync.Mutex
	cur       *os.Process      // the command running, if any
	pending   []syscall.Signal // caught while none runs
	forwarded int              // passed on to cur
}

func newForwarder(in inherited) *forwarder { return &forwarder{in: in} }

// start catches the signals, once, and starts the goroutine that passes
// them on. A terminal's Ctrl-C reaches the command already (one process
// group), so it may see SIGINT twice; a signal sent to the launcher alone
// reaches the command only this way.
func (f *forwarder) start() {
	f.once.Do(func() {
		f.ch = make(chan os.Signal, 4)
		// The signals that end a process by default and that a build
		// tool or a user sends to the launcher alone (make's SIGTERM to
		// its children) or with its command (a terminal's).
		for _, sig := range [...]syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
			syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM} {
			// Notify would un-ignore a signal the launcher inherited
			// ignored, and the command would get its default.
			if !f.in.ignoredAt(sig) {
				signal.Notify(f.ch, sig)
			}
		}
		go func() {
			for s := range f.ch {
				f.mu.Lock()
				if f.cur != nil {
					f.cur.Signal(s)
					f.forwarded++
				} else {
					f.pending = append(f.pending, s.(syscall.Signal))
				}
				f.mu.Unlock()
			}
		}()
	})
}

// before returns a signal caught while no command ran, which ends the
// launcher before it forks; 0 when none was.
func (f *forwarder) before() syscall.Signal {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) > 0 {
		return f.pending[0]
	}
	return 0
}

// running makes p the command the signals go to, passing on any caught
// since before.
func (f *forwarder) running(p *os.Process) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur, f.forwarded = p, 0
	for _, s := range f.pending {
		p.Signal(s)
		f.forwarded++
	}
	f.pending = nil
}

// ended reports whether a signal was passed on to the command that ran,
// or caught and not yet passed on.
func (f *forwarder) ended() (forwarded bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.forwarded
	f.cur, f.forwarded = nil, 0
	return n > 0 || len(f.ch) > 0 || len(f.pending) > 0
}

// child is how a command that runChild ran ended: its state and wall
// time, whether it started at all (the fork may fail), and whether the
// launcher passed on a signal of its own to it (the user's Ctrl-C,
// make's SIGTERM).
type child struct {
	st          *os.ProcessState
	wall        time.Duration
	started     bool
	interrupted bool
}

// runChild forks prog argv with env from the launcher's locked thread,
// with its descriptors 0, 1 and 2, Pdeathsig SIGKILL, the OOM score oom
// raises for it (put back in the launcher after the fork), and the ending
// signals the launcher receives forwarded (fw), and waits for it while
// watching the daemon's connection (watchDaemon). A signal caught before
// the fork ends the launcher as the signal asks (conn is closed first:
// nothing ran).
func runChild(in inherited, fw *forwarder, oom *oomAdj, prog string, argv, env []string, conn *Conn) (ch child, err error) {
	fw.start()
	if sig := fw.before(); sig != 0 {
		conn.Close()
		dieBySignal(sig)
	}
	start := time.Now()
	undo := in.startMask()
	oom.beforeFork()
	proc, err := os.StartProcess(prog, argv, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	oom.afterFork()
	undo()
	if err != nil {
		return child{}, err
	}
	fw.running(proc)
	watchDaemon(conn, proc)
	ch.st, err = proc.Wait()
	ch.interrupted = fw.ended()
	ch.wall, ch.started = time.Since(start), true
	return ch, err
}

// watchDaemon waits, in the calling thread, for the command p to end
// while it watches the connection: if the daemon goes away (its end of
// the connection closes: killed, crashed), it continues the launcher's
// process group with SIGCONT, since the daemon may have frozen the
// command (SIGSTOP to the launcher's children, never to the launcher) and
// no one else would continue it. The group is make's (the launcher keeps
// its parent's), so other commands of the build that the dead daemon
// froze go on too; a running process ignores SIGCONT. poll(2) with
// POLLRDHUP reads nothing, so the daemon's answer to "done" stays for
// Read. The wait is one poll on the command's pidfd and the connection,
// with no goroutine or thread of its own; without pidfds (Linux before
// 5.3) it returns at once and only the wait that follows waits.
func watchDaemon(conn *Conn, p *os.Process) {
	pidfd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(pidfd)
	pfd := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	if f, ok := conn.c.(*os.File); ok {
		if rc, err := f.SyscallConn(); err == nil {
			rc.Control(func(s uintptr) {
				pfd = append(pfd, unix.PollFd{Fd: int32(s), Events: unix.POLLRDHUP})
			})
		}
	}
	for {
		_, err := unix.Poll(pfd, -1)
		if err != nil && err != unix.EINTR {
			return
		}
		if pfd[0].Revents != 0 {
			return
		}
		if len(pfd) > 1 && pfd[1].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0 {
			unix.Kill(0, unix.SIGCONT)
			pfd = pfd[:1]
		}
	}
}
