package main

import (
	"fmt"
	"io"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
)

// progressDisplay shows a run's progress: on a terminal one status line
// redrawn in place (done, running, failed, ETA), with a line printed above
// it for each failure; otherwise one plain line per finished task.
type progressDisplay struct {
	w    io.Writer
	live bool // redraw a status line
	off  bool
	drew bool // a status line is on the screen
}

// newProgressDisplay picks the display for mode ("auto", "lines", "none").
func newProgressDisplay(w io.Writer, mode string) *progressDisplay {
	d := &progressDisplay{w: w, off: mode == "none"}
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

// update is the buildrun.Options.Progress callback; calls never overlap.
func (d *progressDisplay) update(s buildrun.Status) {
	if d.off {
		return
	}
	if !d.live {
		if s.Last != nil {
			fmt.Fprintln(d.w, taskLine(s))
		}
		return
	}
	if s.Last != nil && s.Last.Outcome == buildgraph.Failed {
		d.clear()
		fmt.Fprintln(d.w, taskLine(s))
	}
	fmt.Fprintf(d.w, "\r\033[K%s", statusLine(s))
	d.drew = true
}

// finish ends the live line so what follows starts on a fresh one.
func (d *progressDisplay) finish() { d.clear() }

func (d *progressDisplay) clear() {
	if d.drew {
		fmt.Fprint(d.w, "\r\033[K")
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

// statusLine is "[12/40] 4 running, 1 failed, ETA 0:07, 3.2s".
func statusLine(s buildrun.Status) string {
	eta := "ETA ?"
	if s.ETA >= 0 {
		sec := int(s.ETA.Round(time.Second).Seconds())
		eta = fmt.Sprintf("ETA %d:%02d", sec/60, sec%60)
	}
	return fmt.Sprintf("[%d/%d] %d running, %d failed, %s, %.1fs",
		s.Finished(), s.Total, s.Running, s.Done[buildgraph.Failed], eta, s.Elapsed.Seconds())
}
