package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/numasteal/numasteal/proc"
)

// The output of a task that succeeded, printed when the task is reported
// (buildrun.Options.Progress with Status.Last), before the run releases it:
// as ninja does, after the task's status line, stdout then stderr, each
// whole and in one write, so no other task's output lands inside it.
//
// A stream stays in memory up to the capture limit (proc.Config.OutputLimit,
// proc.DefaultOutputLimit here); past it proc.Output moves the whole stream
// to a spill file, which the run removes once the task is reported. Such a
// stream is printed up to the limit, and the spill file is kept under a
// name of its own (a hard link, or a copy where links fail) that the cut
// note gives, so nothing a task printed is lost and nothing unbounded
// reaches the terminal.

// outputLimit is how much of each stream of a succeeded task is printed.
const outputLimit = proc.DefaultOutputLimit

// appendOutput appends what the task's result printed to buf: the streams
// whole when they fit the limit, else their head and a note of how much was
// cut and where the whole stream was kept.
func appendOutput(buf *bytes.Buffer, res *proc.Result) {
	for _, o := range []struct {
		name string
		out  *proc.Output
	}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		appendStream(buf, o.name, o.out, outputLimit)
	}
}

// appendStream appends one stream, at most limit bytes of it.
func appendStream(buf *bytes.Buffer, name string, o *proc.Output, limit int) {
	n := o.Len()
	if n == 0 {
		return
	}
	spill := o.SpillFile()
	var b []byte
	var err error
	if spill == "" {
		b, err = o.Bytes()
	} else {
		b, err = readHead(spill, limit)
	}
	if err != nil {
		fmt.Fprintf(buf, "(numasteal: %s unreadable: %v)\n", name, err)
		return
	}
	buf.Write(b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		buf.WriteByte('\n')
	}
	if int64(len(b)) < n {
		where := "it could not be kept"
		if kept, err := keepSpill(spill); err == nil {
			where = "the whole stream is in " + kept
		} else {
			where += ": " + err.Error()
		}
		fmt.Fprintf(buf, "(numasteal: %d more bytes of %s cut after %d; %s)\n", n-int64(len(b)), name, len(b), where)
	}
}

// readHead reads at most n bytes from the start of the file.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(n)))
}

// keepSpill gives the spill file a second name, spill+".log", that
// outlives the run's release of the output (which removes the first), and
// returns it: a hard link, which costs nothing in the same directory, or a
// copy where the file system has no links.
func keepSpill(spill string) (string, error) {
	if spill == "" {
		return "", fmt.Errorf("no spill file")
	}
	kept := spill + ".log"
	if err := os.Link(spill, kept); err == nil {
		return kept, nil
	}
	src, err := os.Open(spill)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.OpenFile(kept, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(kept)
		return "", err
	}
	return kept, dst.Close()
}
