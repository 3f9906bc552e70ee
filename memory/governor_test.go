package memory

import (
	"os"
	"testing"
)

// A job's OOM-kill base is the count when it was added, not the count of
// a sample taken before (or never): else any SIGKILL of a job added
// before the first sample, on a machine that has had an OOM kill since
// boot, would pass for an OOM kill.
func TestAddReadsOOMBaseAfresh(t *testing.T) {
	src, err := Open("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	before, err := src.Sample()
	if err != nil {
		t.Skipf("SKIP: no memory sample on this machine: %v", err)
	}
	g := NewGovernor(src, Thresholds{}, Options{})
	g.Add(1, JobSpec{Need: 1 << 20, Pid: os.Getpid()})
	e := g.Remove(1)
	if e.OOMKills < before.OOMKills {
		t.Errorf("Ended.OOMKills = %d, below the count %d read before Add", e.OOMKills, before.OOMKills)
	}
}
