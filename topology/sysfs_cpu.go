package topology

import (
	"fmt"
	"strings"

	"github.com/numasteal/numasteal/topology/cpuset"
)

const (
	cpuDir  = "sys/devices/system/cpu"
	nodeDir = "sys/devices/system/node"
)

// cpuPath returns cpuDir/cpuN/rest.
func cpuPath(cpu int, rest string) string {
	return cpuDir + "/cpu" + itoa(cpu) + "/" + rest
}

// parseCPUDirName returns N for a directory named cpuN (not cpufreq, cpuidle).
func parseCPUDirName(name string) (int, bool) {
	return parseNumbered(name, "cpu")
}

// parseNumbered returns N for prefix+N with N a decimal number no larger
// than cpuset.MaxID.
func parseNumbered(name, prefix string) (int, bool) {
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok || digits == "" || len(digits) > 7 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > cpuset.MaxID || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	return n, true
}

// scanCPUs fills Possible, Present and Online.
//
// Online is the kernel's cpu/online restricted to the cpuN directories that
// exist (a dump may keep fewer CPUs than the kernel had). Without
// cpu/online (kernels before 2.6.2x, and hand-edited dumps) a CPU is online
// unless its cpuN/online file says 0; cpu0 often has no online file because
// it cannot be unplugged. Without cpu/possible or cpu/present, those masks
// are the set of cpuN directories.
func (d *discoverer) scanCPUs() error {
	names, ok, err := d.r.names(cpuDir)
	if err != nil {
		return err
	}
	if !ok {
		return &FileError{Path: cpuDir, Err: fmt.Errorf("no CPU directory: %w", ErrMissing)}
	}
	var dirs cpuset.Set
	for _, n := range names {
		if id, ok := parseCPUDirName(n); ok {
			dirs.Add(id)
		}
	}
	if dirs.IsEmpty() {
		return &FileError{Path: cpuDir, Err: fmt.Errorf("no cpuN directory: %w", ErrMissing)}
	}
	t := d.t
	if t.Possible, ok, err = d.r.list(cpuDir + "/possible"); err != nil {
		return err
	} else if !ok {
		t.Possible = dirs.Clone()
	}
	if t.Present, ok, err = d.r.list(cpuDir + "/present"); err != nil {
		return err
	} else if !ok {
		t.Present = dirs.Clone()
	}
	online, ok, err := d.r.list(cpuDir + "/online")
	if err != nil {
		return err
	}
	if !ok {
		d.debug("no cpu/online: reading cpuN/online files")
		// An absent or empty file (some dumps kept the names only) leaves
		// the CPU online, as hwloc does.
		ids := dirs.IDs()
		offline := make([]bool, len(ids))
		err := d.parallel(len(ids), func(r *reader, i int) error {
			rel := cpuPath(ids[i], "online")
			s, ok, err := r.text(rel)
			if err != nil || !ok || s == "" {
				return err
			}
			v, err := parseInt(s)
			if err != nil {
				return &FileError{Path: rel, Text: clip(s), Err: err}
			}
			offline[i] = v == 0
			return nil
		})
		if err != nil {
			return err
		}
		for i, id := range ids {
			if !offline[i] {
				online.Add(id)
			}
		}
	}
	if missing := online.Difference(dirs); !missing.IsEmpty() {
		d.note("cpu/online lists CPUs %s that have no cpuN directory; they are left out", missing)
	}
	t.Online = online.Intersect(dirs)
	if t.Online.IsEmpty() {
		return &FileError{Path: cpuDir + "/online", Err: fmt.Errorf("no online CPU: %w", ErrMissing)}
	}
	return nil
}
