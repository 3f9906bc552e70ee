package proc

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/internal/freelist"
)

// captures lends each process task a pair of files its stdout and stderr
// are written to, and takes them back emptied once the task has ended.
// A child writes straight to a file: no pipe, no goroutine copying it, no
// descriptor registered with the poller, and a task that prints nothing
// costs an fstat per stream at its end. The files have no name (O_TMPFILE,
// else created and removed at once), are opened O_APPEND (so that a child
// that seeks its output still appends, and a file truncated for the next
// task is written from its start), and serve one task at a time: every
// process of a task is gone when it ends (package supervise), so nothing
// writes into a file after it is handed back.
type captures struct {
	dir  string // where the files live; "" for os.TempDir()
	free freelist.List[*capture]
}

// capture is one task's pair of files.
type capture struct{ out, err *os.File }

// attach makes cp's files the live streams of stdout and stderr.
func (cp *capture) attach(stdout, stderr *Output) {
	stdout.attach(cp.out)
	stderr.attach(cp.err)
}

// get returns an idle pair, or a new one.
func (c *captures) get() (*capture, error) {
	if cp, ok := c.free.Pop(); ok {
		return cp, nil
	}
	out, err := c.newFile()
	if err != nil {
		return nil, err
	}
	errf, err := c.newFile()
	if err != nil {
		out.Close()
		return nil, err
	}
	return &capture{out: out, err: errf}, nil
}

// newFile opens a nameless file for appending in c.dir.
func (c *captures) newFile() (*os.File, error) {
	dir := c.dir
	if dir == "" {
		dir = os.TempDir()
	}
	if f, err := openTmpfile(dir); err == nil {
		return f, nil
	}
	// A file system (or system) without O_TMPFILE: a named file, removed
	// at once.
	f, err := os.CreateTemp(dir, "numasteal-capture-*")
	if err != nil {
		return nil, fmt.Errorf("proc: output capture file: %w", err)
	}
	rerr := os.Remove(f.Name())
	flags, ferr := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if ferr == nil {
		_, ferr = unix.FcntlInt(f.Fd(), unix.F_SETFL, flags|unix.O_APPEND)
	}
	if err := errors.Join(rerr, ferr); err != nil {
		f.Close()
		return nil, fmt.Errorf("proc: output capture file: %w", err)
	}
	return f, nil
}

// drain moves what the task wrote into stdout and stderr and puts the
// emptied pair back for the next task; a pair that cannot be emptied is
// closed instead.
func (c *captures) drain(cp *capture, stdout, stderr *Output) {
	ok1 := drainFile(cp.out, stdout)
	ok2 := drainFile(cp.err, stderr)
	if !ok1 || !ok2 {
		cp.close()
		return
	}
	c.free.Push(cp)
}

// drainFile copies f into o, detaches it from o and truncates it; false
// when f could not be read or emptied (o then holds the error).
func drainFile(f *os.File, o *Output) bool {
	defer o.detach()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		o.fail(fmt.Errorf("proc: reading process output: %w", err))
		return false
	}
	if st.Size == 0 {
		return true
	}
	if _, err := o.ReadFrom(io.NewSectionReader(f, 0, math.MaxInt64)); err != nil {
		o.fail(fmt.Errorf("proc: reading process output: %w", err))
		return false
	}
	o.detach()
	return f.Truncate(0) == nil
}

// close closes every idle pair.
func (c *captures) close() { c.free.Drain((*capture).close) }

func (cp *capture) close() {
	cp.out.Close()
	cp.err.Close()
}
