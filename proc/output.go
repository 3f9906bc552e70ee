package proc

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
)

// DefaultOutputLimit is how many bytes of each output stream a process task
// keeps in memory before it spills the stream to a temporary file.
const DefaultOutputLimit = 64 << 10

// copyBufSize is the size of the buffers an Output reads a child's pipe
// through (ReadFrom): io.Copy's.
const copyBufSize = 32 << 10

// copyBufs lends the buffers Outputs read pipes through, so that a task
// allocates none (io.Copy would make one of copyBufSize per stream, most
// of what a run of short tasks allocates). One per Runner: a buffer is in
// use only while a stream is being copied, so the pool holds about two per
// running process.
type copyBufs struct{ pool sync.Pool }

func (c *copyBufs) get() *[]byte {
	if b, ok := c.pool.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, copyBufSize)
	return &b
}

func (c *copyBufs) put(b *[]byte) { c.pool.Put(b) }

// Output is one captured output stream (stdout or stderr) of a process
// task. The first bytes are kept in memory; once the stream grows past the
// limit, all of it moves to a temporary file, so a compiler that prints a
// megabyte of warnings costs a file, not a megabyte of heap per task. It is
// safe for concurrent use. Close removes the file.
type Output struct {
	mu      sync.Mutex
	limit   int
	dir     string
	buf     []byte
	f       *os.File // the spill file, while still being written
	path    string   // the spill file's name, "" while in memory
	n       int64
	err     error // the first write error to the spill file
	removed bool
	// live is the file a running child writes the stream to (captures),
	// until the stream is drained from it: Len, Bytes and Tail read it.
	live *os.File
	// track registers the spill file with the watchdog of the runner's
	// Supervisor (supervise.Supervisor.TempPath), which removes it should
	// this process be killed before Close; forget undoes that.
	track  func(path string) (forget func())
	forget func()
	bufs   *copyBufs // lends ReadFrom its buffer; nil: ReadFrom makes one
}

// newOutput returns an Output that keeps up to limit bytes in memory and
// spills into a temporary file in dir ("" for os.TempDir), registered
// with track (nil: not registered), reading pipes through buffers of bufs
// (nil: its own).
func newOutput(limit int, dir string, track func(string) func(), bufs *copyBufs) *Output {
	return &Output{limit: limit, dir: dir, track: track, bufs: bufs}
}

// ReadFrom implements io.ReaderFrom: it writes all of r to the stream
// until EOF, as Write would, through a buffer lent by the runner. os/exec
// copies a child's output pipe with io.Copy, which calls it.
func (o *Output) ReadFrom(r io.Reader) (int64, error) {
	bufs := o.bufs
	if bufs == nil {
		bufs = &copyBufs{}
	}
	bp := bufs.get()
	defer bufs.put(bp)
	buf := *bp
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			o.Write(buf[:k]) // never fails (Write)
			n += int64(k)
		}
		switch {
		case err == io.EOF:
			return n, nil
		case err != nil:
			return n, err
		}
	}
}

// Write implements io.Writer. It never fails to the writer (the child
// process must not see a broken pipe because the disk is full); a spill
// error is kept and returned by Bytes.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n += int64(len(p))
	if o.err != nil || o.removed {
		return len(p), nil
	}
	if o.path == "" && len(o.buf)+len(p) <= o.limit {
		o.buf = append(o.buf, p...)
		return len(p), nil
	}
	if o.path == "" {
		f, err := os.CreateTemp(o.dir, "numasteal-output-*")
		if err != nil {
			o.err = fmt.Errorf("proc: spilling process output: %w", err)
			return len(p), nil
		}
		o.f, o.path = f, f.Name()
		if o.track != nil {
			o.forget = o.track(o.path)
		}
		if _, err := f.Write(o.buf); err != nil {
			o.err = fmt.Errorf("proc: spilling process output to %s: %w", o.path, err)
		}
		o.buf = nil
	}
	if o.f != nil && o.err == nil {
		if _, err := o.f.Write(p); err != nil {
			o.err = fmt.Errorf("proc: spilling process output to %s: %w", o.path, err)
		}
	}
	return len(p), nil
}

// fail records err as the stream's error (the first one stays), for a
// capture that could not be read.
func (o *Output) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = err
	}
}

// seal closes the spill file for writing once the process has exited.
func (o *Output) seal() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f != nil {
		if err := o.f.Close(); err != nil && o.err == nil {
			o.err = fmt.Errorf("proc: spilling process output to %s: %w", o.path, err)
		}
		o.f = nil
	}
}

// Len returns the number of bytes the process wrote to the stream.
func (o *Output) Len() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.live != nil {
		if fi, err := o.live.Stat(); err == nil {
			return fi.Size()
		}
	}
	return o.n
}

// attach makes f the file the running child writes the stream to.
func (o *Output) attach(f *os.File) {
	o.mu.Lock()
	o.live = f
	o.mu.Unlock()
}

// detach ends attach, once the stream has been drained from the file.
func (o *Output) detach() {
	o.mu.Lock()
	o.live = nil
	o.mu.Unlock()
}

// SpillFile returns the name of the temporary file holding the stream, or
// "" while it fits in memory.
func (o *Output) SpillFile() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.path
}

// Bytes returns the whole stream, read back from the spill file when there
// is one.
func (o *Output) Bytes() ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return nil, o.err
	}
	if o.removed {
		return nil, fmt.Errorf("proc: process output already closed")
	}
	if o.live != nil {
		return io.ReadAll(io.NewSectionReader(o.live, 0, math.MaxInt64))
	}
	if o.path == "" {
		return bytes.Clone(o.buf), nil
	}
	return os.ReadFile(o.path)
}

// Tail returns at most the last n bytes of the stream, for showing the end
// of a long failure without reading it all into memory.
func (o *Output) Tail(n int) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return nil, o.err
	}
	if o.removed {
		return nil, fmt.Errorf("proc: process output already closed")
	}
	f := o.live
	switch {
	case f != nil:
	case o.path == "":
		return bytes.Clone(o.buf[max(0, len(o.buf)-n):]), nil
	default:
		var err error
		if f, err = os.Open(o.path); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	size := o.n
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	off := max(0, size-int64(n))
	buf := make([]byte, size-off)
	_, err := io.ReadFull(io.NewSectionReader(f, off, size-off), buf)
	return buf, err
}

// Close removes the spill file, if any. The Output is unusable afterwards.
func (o *Output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.removed {
		return nil
	}
	o.removed = true
	o.buf = nil
	var err error
	if o.f != nil {
		err = o.f.Close()
		o.f = nil
	}
	if o.path != "" {
		if rerr := os.Remove(o.path); rerr != nil && err == nil {
			err = rerr
		}
	}
	if o.forget != nil {
		o.forget()
		o.forget = nil
	}
	return err
}
