package main

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
)

// progressDisplay shows a run's progress: on a terminal one status line
// redrawn in place (done, running, failed, ETA), with a line printed above
// it for each failure; otherwise one plain line per finished task. Unless
// quiet, a task that succeeded and printed something gets its status line
// and then its output (run_output.go) in either mode, and with progress
// off its output alone. With verbose, each command is printed as it
// starts.
type progressDisplay struct {
	w       io.Writer
	live    bool // redraw a status line
	off     bool
	quiet   bool // no output of succeeded tasks
	verbose bool // print each command as it starts
	drew    bool // a status line is on the screen
	buf     bytes.Buffer
}

// newProgressDisplay picks the display for mode ("auto", "lines", "none").
func newProgressDisplay(w io.Writer, mode string, quiet, verbose bool) *progressDisplay {
	d := &progressDisplay{w: w, off: mode == "none", quiet: quiet, verbose: verbose}
	if mode == "auto" {
		d.live = isTerminal(w)
	}
	return d
}

// every is how often a live display is redrawn while nothing ends.
func (d *progressDisplay) every() time.Duration {
	if d.live {
		return 100 * time.Millisecond
	}
	return 0
}

// update is the buildrun.Options.Progress callback; calls never overlap
// (with each other or with started). Each call writes once, so the lines
// and output of one task are never split by another's.
func (d *progressDisplay) update(s buildrun.Status) {
	d.buf.Reset()
	var output bool // the task's output follows its status line
	if tr := s.Last; tr != nil && !d.quiet && tr.Outcome == buildgraph.Succeeded && tr.Proc != nil {
		output = tr.Proc.Stdout.Len() > 0 || tr.Proc.Stderr.Len() > 0
	}
	switch {
	case d.off:
		if output {
			d.appendOutput(s.Last.Proc)
		}
	case !d.live:
		if s.Last != nil {
			fmt.Fprintln(&d.buf, taskLine(s))
			if output {
				d.appendOutput(s.Last.Proc)
			}
		}
	default:
		if s.Last != nil && (s.Last.Outcome == buildgraph.Failed || output) {
			d.clearTo(&d.buf)
			fmt.Fprintln(&d.buf, taskLine(s))
			if output {
				d.appendOutput(s.Last.Proc)
			}
		}
		fmt.Fprintf(&d.buf, "\r\033[K%s", statusLine(s))
		d.drew = true
	}
	d.flush()
}

// started is the buildrun.Options.Started callback: with verbose, the
// command line of each task as it starts, in a line of its own.
func (d *progressDisplay) started(t *buildgraph.Task) {
	if !d.verbose {
		return
	}
	d.buf.Reset()
	d.clearTo(&d.buf)
	if t.Cwd != "" {
		fmt.Fprintf(&d.buf, "cd %s && ", buildgraph.QuoteWords([]string{t.Cwd}))
	}
	fmt.Fprintln(&d.buf, t.CommandLine())
	d.flush()
}

func (d *progressDisplay) flush() {
	if d.buf.Len() > 0 {
		d.w.Write(d.buf.Bytes())
	}
}

// finish ends the live line so what follows starts on a fresh one.
func (d *progressDisplay) finish() { d.clear() }

func (d *progressDisplay) clear() {
	d.buf.Reset()
	d.clearTo(&d.buf)
	d.flush()
}

// clearTo appends what erases the live line, if one is drawn, to buf.
func (d *progressDisplay) clearTo(buf *bytes.Buffer) {
	if d.drew {
		buf.WriteString("\r\033[K")
		d.drew = false
	}
}

// taskLine is "[3/10] ok a.o 0.52s" or "[4/10] FAILED b.o: exit status 1".
func taskLine(s buildrun.Status) string {
	tr := s.Last
	head := fmt.Sprintf("[%d/%d]", s.Finished(), s.Total)
	switch {
	case tr.Outcome == buildgraph.Failed:
		return fmt.Sprintf("%s FAILED %s: %v", head, tr.Task.ID, tr.Proc.Err)
	case tr.Proc != nil && tr.Outcome == buildgraph.Succeeded:
		return fmt.Sprintf("%s ok %s %.2fs", head, tr.Task.ID, tr.Proc.Wall.Seconds())
	}
	return fmt.Sprintf("%s %v %s", head, tr.Outcome, tr.Task.ID)
}

// statusLine is "[12/40] 4 running, 1 failed, ETA 0:07, 3.2s", with the
// memory after the failed count when a governor runs (memoryStatus).
func statusLine(s buildrun.Status) string {
	eta := "ETA ?"
	if s.ETA >= 0 {
		sec := int(s.ETA.Round(time.Second).Seconds())
		eta = fmt.Sprintf("ETA %d:%02d", sec/60, sec%60)
	}
	return fmt.Sprintf("[%d/%d] %d running, %d failed%s, %s, %.1fs",
		s.Finished(), s.Total, s.Running, s.Done[buildgraph.Failed], memoryStatus(s.Memory), eta, s.Elapsed.Seconds())
}
