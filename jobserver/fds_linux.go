//go:build linux

package jobserver

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// hintRecursive explains the usual cause of closed jobserver descriptors.
const hintRecursive = " (make closes the jobserver for non-recursive recipes: prefix the recipe with '+' or use $(MAKE))"

// endpoint is one process's handle on a jobserver: a private non-blocking
// read descriptor, a write descriptor, and what to export to children.
type endpoint struct {
	rfd    int  // read side, O_NONBLOCK on its own open file description
	shared bool // rfd shares the inherited description (no /proc): reads may block
	wfd    int  // write side
	// export: pipe form passes r and w as ExtraFiles; FIFO form passes path.
	r, w *os.File
	path string
}

// close closes every descriptor the endpoint owns.
func (e *endpoint) close() error {
	errs := []error{unix.Close(e.rfd), unix.Close(e.wfd)}
	if e.r != nil {
		errs = append(errs, e.r.Close(), e.w.Close())
	}
	return errors.Join(errs...)
}

// openPipe joins the pipe jobserver on inherited descriptors r and w after
// checking that both are open pipes with the right access modes.
func openPipe(option string, r, w int) (*endpoint, error) {
	unavailable := func(op string, err error) error {
		return &UnavailableError{Option: option, Op: op, Err: err}
	}
	if r == w {
		return nil, unavailable("check", errors.New("read and write descriptors are equal"))
	}
	for _, fd := range []struct {
		n     int
		write bool
	}{{r, false}, {w, true}} {
		var st unix.Stat_t
		if err := unix.Fstat(fd.n, &st); err != nil {
			return nil, unavailable("fstat fd "+strconv.Itoa(fd.n), fmt.Errorf("%w%s", err, hintRecursive))
		}
		if st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return nil, unavailable("check fd "+strconv.Itoa(fd.n), fmt.Errorf("not a pipe (mode %#o), the descriptor was reused%s", st.Mode, hintRecursive))
		}
		fl, err := unix.FcntlInt(uintptr(fd.n), unix.F_GETFL, 0)
		if err != nil {
			return nil, unavailable("fcntl fd "+strconv.Itoa(fd.n), err)
		}
		acc := fl & unix.O_ACCMODE
		if (fd.write && acc == unix.O_RDONLY) || (!fd.write && acc == unix.O_WRONLY) {
			return nil, unavailable("check fd "+strconv.Itoa(fd.n), fmt.Errorf("wrong access mode %#o", acc))
		}
	}
	// Both ends of one pipe share its inode: descriptors of two pipes (one
	// of them reused) would read tokens from one and write them into the
	// other, and a read side whose writers are all gone is at end of file.
	if !sameFile(r, w) {
		return nil, unavailable("check fds "+strconv.Itoa(r)+","+strconv.Itoa(w), fmt.Errorf("not the two ends of one pipe, a descriptor was reused%s", hintRecursive))
	}
	e := &endpoint{rfd: -1, wfd: -1}
	var err error
	// A new open file description of the same pipe: O_NONBLOCK on it does
	// not disturb make, which toggles O_NONBLOCK on the shared one.
	e.rfd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(r), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil || !sameFile(e.rfd, r) {
		if e.rfd >= 0 {
			unix.Close(e.rfd)
		}
		e.shared = true
		if e.rfd, err = unix.FcntlInt(uintptr(r), unix.F_DUPFD_CLOEXEC, 3); err != nil {
			return nil, unavailable("dup fd "+strconv.Itoa(r), err)
		}
	}
	if e.wfd, err = unix.FcntlInt(uintptr(w), unix.F_DUPFD_CLOEXEC, 3); err != nil {
		unix.Close(e.rfd)
		return nil, unavailable("dup fd "+strconv.Itoa(w), err)
	}
	rx, err1 := unix.FcntlInt(uintptr(r), unix.F_DUPFD_CLOEXEC, 3)
	wx, err2 := unix.FcntlInt(uintptr(w), unix.F_DUPFD_CLOEXEC, 3)
	if err := errors.Join(err1, err2); err != nil {
		for _, fd := range []int{e.rfd, e.wfd, rx, wx} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		return nil, unavailable("dup", err)
	}
	// Children receive the jobserver only through Prepare, at the
	// descriptor numbers Prepare writes into their MAKEFLAGS: the inherited
	// descriptors (not close-on-exec, as make passes them) must not leak into
	// every child at numbers its MAKEFLAGS may not name. FD_CLOEXEC belongs
	// to the descriptor, not the shared description, so make is unaffected.
	unix.FcntlInt(uintptr(r), unix.F_SETFD, unix.FD_CLOEXEC)
	unix.FcntlInt(uintptr(w), unix.F_SETFD, unix.FD_CLOEXEC)
	// NewFile keeps the descriptors' blocking mode, and File.Fd (used by
	// os/exec) does not change it.
	e.r = os.NewFile(uintptr(rx), "jobserver-r")
	e.w = os.NewFile(uintptr(wx), "jobserver-w")
	return e, nil
}

// openFIFO joins the FIFO jobserver at path.
func openFIFO(option, path string) (*endpoint, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, &UnavailableError{Option: option, Op: "stat " + path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil, &UnavailableError{Option: option, Op: "check " + path, Err: errors.New("not a FIFO")}
	}
	rfd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &UnavailableError{Option: option, Op: "open " + path, Err: err}
	}
	// O_RDWR never blocks on a FIFO and keeps it open for writing.
	wfd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(rfd)
		return nil, &UnavailableError{Option: option, Op: "open " + path, Err: err}
	}
	return &endpoint{rfd: rfd, wfd: wfd, path: path}, nil
}

// sameFile reports whether descriptors a and b refer to the same inode.
func sameFile(a, b int) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(a, &sa) != nil || unix.Fstat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// readToken reads one byte without blocking (unless the endpoint is shared).
// ok is false when the pipe is empty.
func (e *endpoint) readToken() (b byte, ok bool, err error) {
	var buf [1]byte
	for {
		n, err := unix.Read(e.rfd, buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, false, nil
		case err != nil:
			return 0, false, fmt.Errorf("jobserver: read token: %w", err)
		case n == 0:
			return 0, false, fmt.Errorf("jobserver: read token: %w", ErrBroken)
		}
		return buf[0], true, nil
	}
}

// writeToken writes b back; it waits for room if the write side is
// non-blocking and the pipe is full.
func (e *endpoint) writeToken(b byte) error {
	buf := [1]byte{b}
	for {
		_, err := unix.Write(e.wfd, buf[:])
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			fds := []unix.PollFd{{Fd: int32(e.wfd), Events: unix.POLLOUT}}
			if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
				return fmt.Errorf("jobserver: write token: poll: %w", err)
			}
			continue
		}
		return fmt.Errorf("jobserver: write token: %w", err)
	}
}

// pending returns the number of tokens in the pipe (FIONREAD).
func (e *endpoint) pending() (int, error) {
	n, err := unix.IoctlGetInt(e.rfd, unix.TIOCINQ) // TIOCINQ == FIONREAD
	if err != nil {
		return 0, fmt.Errorf("jobserver: FIONREAD: %w", err)
	}
	return n, nil
}
