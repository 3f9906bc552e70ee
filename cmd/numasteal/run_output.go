package main

import (
	"fmt"
	"io"
	"os"

	"github.com/numasteal/numasteal/proc"
)

// The output of a task that succeeded, printed when the task is reported
// (buildrun.Options.Progress with Status.Last), before the run releases it:
// as ninja does, after the task's status line, stdout then stderr, each
// whole. The display's writes for one task are contiguous (its callback
// never overlaps another), so no other task's output lands inside it.
//
// A stream stays in memory up to the capture limit (proc.Config.OutputLimit,
// proc.DefaultOutputLimit here); past it proc.Output moves the whole stream
// to a spill file, which the run removes once the task is reported. Such a
// stream is copied from the file to the output, whole: nothing a task
// printed is lost or cut, only the memory a task's output may take is
// bounded, and no file outlives the run.

// appendOutput writes what the task's result printed after what d holds:
// streams in memory are appended to d's buffer; a spilled stream is copied
// from its file straight to d's writer, after the buffer is flushed.
func (d *progressDisplay) appendOutput(res *proc.Result) {
	for _, o := range []struct {
		name string
		out  *proc.Output
	}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		d.appendStream(o.name, o.out)
	}
}

// appendStream writes one stream, whole, ending it with a newline.
func (d *progressDisplay) appendStream(name string, o *proc.Output) {
	if o.Len() == 0 {
		return
	}
	spill := o.SpillFile()
	if spill == "" {
		b, err := o.Bytes()
		if err != nil {
			fmt.Fprintf(&d.buf, "(numasteal: %s unreadable: %v)\n", name, err)
			return
		}
		d.buf.Write(b)
		if b[len(b)-1] != '\n' {
			d.buf.WriteByte('\n')
		}
		return
	}
	d.flush()
	d.buf.Reset()
	last, err := copyFile(d.w, spill)
	switch {
	case err != nil:
		fmt.Fprintf(&d.buf, "\n(numasteal: %s unreadable: %v)\n", name, err)
	case last != '\n':
		d.buf.WriteByte('\n')
	}
}

// copyFile copies the file at path to w and returns its last byte.
func copyFile(w io.Writer, path string) (last byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			last = buf[n-1]
			if _, werr := w.Write(buf[:n]); werr != nil {
				return last, werr
			}
		}
		if err == io.EOF {
			return last, nil
		}
		if err != nil {
			return last, err
		}
	}
}
