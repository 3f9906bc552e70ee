package topology

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MemoryCgroup is one cgroup directory that accounts a process's memory:
// the process's own cgroup or one of its ancestors, in the cgroup v1
// "memory" hierarchy or in the v2 unified hierarchy when its
// cgroup.controllers lists "memory".
type MemoryCgroup struct {
	// Dir is the directory below the root that MemoryCgroups was given
	// ("/sys/fs/cgroup/memory/build" for a v1 group seen from "/").
	Dir string
	// V2 is true for the unified hierarchy (memory.max, memory.current,
	// memory.events), false for v1 (memory.limit_in_bytes,
	// memory.usage_in_bytes, memory.oom_control).
	V2 bool
	// Depth is 0 for the process's own cgroup, 1 for its parent, and so on
	// up to the mount's root.
	Depth int
}

// MemoryCgroups returns the memory cgroups of process pid (0: the
// calling process, "self"), read below root ("/" for the live machine):
// for each hierarchy that has the memory controller, the process's cgroup
// and its ancestors up to the mount's root, own cgroup first, v1 before
// v2 where a machine has both (a v1 memory controller leaves none to v2).
// A process in no memory hierarchy (no controller mounted, or a cgroup
// namespace that hides the directory) gives nil and no error; a malformed
// proc/PID/cgroup or mountinfo gives a *FileError.
func MemoryCgroups(root string, pid int) ([]MemoryCgroup, error) {
	proc := "self"
	if pid > 0 {
		proc = strconv.Itoa(pid)
	}
	read := func(rel string) ([]byte, bool, error) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			if os.IsNotExist(err) {
				return nil, false, nil
			}
			return nil, false, err
		}
		return b, true, nil
	}
	cgPath := path.Join("proc", proc, "cgroup")
	data, ok, err := read(cgPath)
	if err != nil || !ok {
		return nil, err
	}
	lines, bad, err := parseProcCgroup(data)
	if err != nil {
		return nil, &FileError{Path: cgPath, Text: clip(bad), Err: err}
	}
	mi := path.Join("proc", proc, "mountinfo")
	data, ok, err = read(mi)
	if err != nil {
		return nil, err
	}
	var mounts []mount
	if ok {
		if mounts, bad, err = parseMountinfo(data); err != nil {
			return nil, &FileError{Path: mi, Text: clip(bad), Err: err}
		}
	} else {
		mounts = []mount{
			{Root: "/", Dir: "/sys/fs/cgroup/memory", FSType: "cgroup", Options: []string{"memory"}},
			{Root: "/", Dir: "/sys/fs/cgroup", FSType: "cgroup2"},
		}
	}
	var out []MemoryCgroup
	for _, v2 := range []bool{false, true} {
		for _, m := range mounts {
			ctrl := "memory"
			switch {
			case !v2 && m.FSType == "cgroup" && m.hasOption("memory"):
			case v2 && m.FSType == "cgroup2":
				ctrls, ok, err := read(join(m.Dir, "/", "cgroup.controllers"))
				if err != nil || !ok || !slices.Contains(strings.Fields(string(ctrls)), "memory") {
					continue
				}
				ctrl = ""
			default:
				continue
			}
			cg, ok := cgroupPath(lines, ctrl)
			if !ok {
				continue
			}
			if cg, ok = inMount(m, cg); !ok {
				continue
			}
			depth := 0
			for p := path.Clean(cg); ; p = path.Dir(p) {
				out = append(out, MemoryCgroup{Dir: "/" + join(m.Dir, p, ""), V2: v2, Depth: depth})
				depth++
				if p == "/" {
					break
				}
			}
			break
		}
		if len(out) > 0 {
			break
		}
	}
	return out, nil
}

// String returns the directory and its hierarchy, as messages name it.
func (c MemoryCgroup) String() string {
	v := "v1"
	if c.V2 {
		v = "v2"
	}
	return fmt.Sprintf("%s (cgroup %s)", c.Dir, v)
}
