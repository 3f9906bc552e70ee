package topology

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// cgroupLine is one line of proc/self/cgroup: "hierarchy-id:controllers:path",
// e.g. "4:cpuset:/job" (cgroup v1) or "0::/user.slice" (the v2 unified
// hierarchy, whose controller list is empty).
type cgroupLine struct {
	ID          int
	Controllers []string
	Path        string
}

// parseProcCgroup parses proc/self/cgroup. On error it returns the
// offending line.
func parseProcCgroup(data []byte) ([]cgroupLine, string, error) {
	var out []cgroupLine
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		line := strings.TrimSpace(string(l))
		if line == "" {
			continue
		}
		idText, rest, ok1 := strings.Cut(line, ":")
		ctrls, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || !strings.HasPrefix(path, "/") {
			return nil, line, fmt.Errorf("cgroup line is not id:controllers:/path: %w", ErrSyntax)
		}
		id, err := strconv.Atoi(idText)
		if err != nil || id < 0 {
			return nil, line, fmt.Errorf("hierarchy id %q: %w", idText, ErrSyntax)
		}
		cl := cgroupLine{ID: id, Path: path}
		if ctrls != "" {
			cl.Controllers = strings.Split(ctrls, ",")
		}
		out = append(out, cl)
	}
	return out, "", nil
}

// mount is one mounted file system, from proc/self/mountinfo or proc/mounts.
type mount struct {
	// Root is the directory of the file system mounted at Dir ("/" unless
	// a cgroup namespace or bind mount shows a subtree); proc/mounts does
	// not say, and Root is "/" then.
	Root   string
	Dir    string
	FSType string
	// Options holds the mount and super-block options together; for
	// cgroup v1 the controller names ("cpuset", "cpu") are among them.
	Options []string
}

// hasOption reports whether o is among m's options.
func (m mount) hasOption(o string) bool {
	for _, x := range m.Options {
		if x == o {
			return true
		}
	}
	return false
}

// unescapeMount undoes the octal escapes (\040 for space) the kernel puts
// in mount paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseMounts parses proc/mounts ("device dir type options dump pass").
func parseMounts(data []byte) ([]mount, string, error) {
	var out []mount
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		line := string(l)
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return nil, strings.TrimSpace(line), fmt.Errorf("mount line has %d fields, want 6: %w", len(f), ErrSyntax)
		}
		out = append(out, mount{Root: "/", Dir: unescapeMount(f[1]), FSType: f[2], Options: strings.Split(f[3], ",")})
	}
	return out, "", nil
}

// parseMountinfo parses proc/self/mountinfo:
// "id parent major:minor root dir options [optional...] - type source superoptions".
func parseMountinfo(data []byte) ([]mount, string, error) {
	var out []mount
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		line := string(l)
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 6 || sep < 0 || sep+2 >= len(f) {
			return nil, strings.TrimSpace(line), fmt.Errorf("mountinfo line lacks \"- type source options\": %w", ErrSyntax)
		}
		opts := strings.Split(f[5], ",")
		if sep+3 < len(f) {
			opts = append(opts, strings.Split(f[sep+3], ",")...)
		}
		out = append(out, mount{Root: unescapeMount(f[3]), Dir: unescapeMount(f[4]), FSType: f[sep+1], Options: opts})
	}
	return out, "", nil
}

// parseCPUMax parses cgroup v2 cpu.max: "max 100000" (no limit, ok false)
// or "50000 100000" (quota and period in microseconds).
func parseCPUMax(t string) (quota, period int64, ok bool, err error) {
	f := strings.Fields(t)
	if len(f) != 2 {
		return 0, 0, false, fmt.Errorf("cpu.max is not \"quota period\": %w", ErrSyntax)
	}
	period, err = strconv.ParseInt(f[1], 10, 64)
	if err != nil || period <= 0 {
		return 0, 0, false, fmt.Errorf("period %q: %w", f[1], ErrSyntax)
	}
	if f[0] == "max" {
		return 0, period, false, nil
	}
	quota, err = strconv.ParseInt(f[0], 10, 64)
	if err != nil || quota <= 0 {
		return 0, 0, false, fmt.Errorf("quota %q: %w", f[0], ErrSyntax)
	}
	return quota, period, true, nil
}
