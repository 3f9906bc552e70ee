package launch

import (
	"bytes"
	"os"
	"strconv"
)

// buildTools are the command names (comm, as /proc/PID/stat shows them)
// of the programs whose outermost instance names a build.
var buildTools = map[string]bool{
	"make": true, "gmake": true, "remake": true, "ninja": true, "samu": true,
	"meson": true, "cmake": true, "ctest": true, "scons": true, "bazel": true,
}

// BuildID names the build a launcher belongs to ("Build identity" in the
// package documentation): $NUMASTEAL_BUILD when set; else the outermost
// ancestor whose command is a build tool (make, ninja, ...), as
// "comm-PID-STARTTIME" (the start time keeps a reused pid from naming an
// old build); else the parent process the same way. It reads
// /proc/PID/stat of each ancestor: about 10 µs each.
func BuildID(getenv func(string) string) string {
	if b := getenv("NUMASTEAL_BUILD"); b != "" {
		return b
	}
	return buildIDFrom("/proc", os.Getppid())
}

func buildIDFrom(proc string, ppid int) string {
	best := ""
	first := ""
	for pid, depth := ppid, 0; pid > 1 && depth < 64; depth++ {
		st, err := readStat(proc, pid)
		if err != nil {
			break
		}
		id := st.comm + "-" + strconv.Itoa(pid) + "-" + st.start
		if first == "" {
			first = id
		}
		if buildTools[st.comm] {
			best = id
		}
		pid = st.ppid
	}
	if best == "" {
		best = first
	}
	if best == "" {
		best = "pid-" + strconv.Itoa(ppid)
	}
	return sanitizeID(best)
}

// procStat is the part of /proc/PID/stat BuildID needs.
type procStat struct {
	comm  string
	ppid  int
	start string // field 22, clock ticks since boot
}

func readStat(proc string, pid int) (procStat, error) {
	b, err := os.ReadFile(proc + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses /proc/PID/stat: "pid (comm) state ppid ...", where comm
// may hold spaces and parentheses, so it ends at the last ')'.
func parseStat(b []byte) (procStat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, ErrMalformed
	}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3 (state); ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return procStat{}, ErrMalformed
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procStat{}, ErrMalformed
	}
	return procStat{comm: string(b[open+1 : end]), ppid: ppid, start: string(f[19])}, nil
}

// sanitizeID keeps an id usable as a file name and a protocol value.
func sanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return string(b)
}
