package topology

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The parsers in this file are pure functions over the text of one file.
// They return plain errors; the reader wraps them in a *FileError that names
// the file and the offending text.

// parseInt parses a decimal integer such as a sysfs id ("0", "-1").
func parseInt(t string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(t))
	if err != nil {
		return 0, err
	}
	return v, nil
}

// parseCacheSize parses cache/indexN/size: a decimal number followed by a
// binary unit, K, M or G (the kernel always writes "%uK"; "8M" is accepted
// too), optionally followed by "B" or "iB".
func parseCacheSize(t string) (int64, error) {
	t = strings.TrimSpace(t)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size does not start with a number: %w", ErrSyntax)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size number: %w", ErrRange)
	}
	var shift uint
	switch unit := strings.TrimSuffix(strings.TrimSuffix(t[i:], "B"), "i"); unit {
	case "K", "k":
		shift = 10
	case "M":
		shift = 20
	case "G":
		shift = 30
	default:
		return 0, fmt.Errorf("size unit %q is not K, M or G: %w", t[i:], ErrSyntax)
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size overflows: %w", ErrRange)
	}
	return n << shift, nil
}

// maxDistance bounds a NUMA distance. ACPI SLIT entries are bytes (255 =
// unreachable) but the kernel stores ints and some firmware (and numa
// emulation) writes larger values, so we only reject what cannot be a
// distance at all.
const maxDistance = 1 << 16

// parseDistanceRow parses nodeN/distance: space-separated distances, one per
// online node in increasing node order.
func parseDistanceRow(t string) ([]int, error) {
	fields := strings.Fields(t)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty distance row: %w", ErrMissing)
	}
	row := make([]int, len(fields))
	for i, f := range fields {
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("distance %d %q is not a number: %w", i, f, ErrSyntax)
		}
		if v < 0 || v > maxDistance {
			return nil, fmt.Errorf("distance %d is %d, outside 0..%d: %w", i, v, maxDistance, ErrRange)
		}
		row[i] = v
	}
	return row, nil
}

// parseMemTotal finds the MemTotal line of proc/meminfo ("MemTotal:
// 16384 kB") or nodeN/meminfo ("Node 0 MemTotal: 16384 kB") and returns it
// in bytes, with the offending line on error.
func parseMemTotal(data []byte) (bytesTotal int64, line string, err error) {
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		i := bytes.Index(l, []byte("MemTotal:"))
		if i < 0 {
			continue
		}
		line = string(bytes.TrimSpace(l))
		prefix := strings.Fields(string(l[:i]))
		if !(len(prefix) == 0 || len(prefix) == 2 && prefix[0] == "Node") {
			return 0, line, fmt.Errorf("unexpected prefix before MemTotal: %w", ErrSyntax)
		}
		f := strings.Fields(string(l[i+len("MemTotal:"):]))
		if len(f) != 2 || f[1] != "kB" {
			return 0, line, fmt.Errorf("MemTotal is not \"N kB\": %w", ErrSyntax)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, line, fmt.Errorf("MemTotal %q is not a number of kB: %w", f[0], ErrSyntax)
		}
		if kb > math.MaxInt64>>10 {
			return 0, line, fmt.Errorf("MemTotal overflows: %w", ErrRange)
		}
		return kb << 10, line, nil
	}
	return 0, "", fmt.Errorf("no MemTotal line: %w", ErrMissing)
}

// keyValue splits a "key : value" line of proc/cpuinfo or proc/self/status
// (tabs and spaces around the colon vary).
func keyValue(line string) (key, value string, ok bool) {
	k, v, ok := strings.Cut(line, ":")
	if !ok {
		return "", "", false
	}
	return strings.TrimSpace(k), strings.TrimSpace(v), true
}

// cpuinfo is what we take from proc/cpuinfo: the first processor's
// identification and a few hints at the architecture.
type cpuinfo struct {
	vendor, model   string
	family, modelID int // -1 when absent
	archHint        string
}

// parseCPUInfo reads the identification of the first processor from
// proc/cpuinfo. It knows the field names of x86 (vendor_id, cpu family,
// model, model name, flags), ia64 (vendor, family, arch), POWER (cpu),
// ARM (CPU architecture, Hardware) and s390 (vendor_id IBM/S390). Lines
// without a colon are skipped; numbers that do not parse are an error.
func parseCPUInfo(data []byte) (cpuinfo, string, error) {
	ci := cpuinfo{family: -1, modelID: -1}
	seenProcessor := 0
	var flags, cpuArch, ia64Arch string
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		k, v, ok := keyValue(string(l))
		if !ok {
			continue
		}
		switch k {
		case "processor":
			seenProcessor++
			if seenProcessor > 1 {
				data = nil // only the first processor's block
			}
		case "vendor_id", "vendor":
			if ci.vendor == "" {
				ci.vendor = v
			}
		case "model name", "cpu":
			if ci.model == "" {
				ci.model = v
			}
		case "cpu family", "family":
			if ci.family < 0 {
				n, err := strconv.Atoi(v)
				if err != nil {
					if k == "family" { // ia64 may say "Itanium 2"
						continue
					}
					return ci, strings.TrimSpace(string(l)), fmt.Errorf("%s is not a number: %w", k, ErrSyntax)
				}
				ci.family = n
			}
		case "model":
			if ci.modelID < 0 {
				if n, err := strconv.Atoi(v); err == nil {
					ci.modelID = n
				}
			}
		case "flags":
			if flags == "" {
				flags = " " + v + " "
			}
		case "CPU architecture":
			cpuArch = v
		case "arch":
			ia64Arch = v
		}
	}
	switch {
	case ia64Arch == "IA-64":
		ci.archHint = "ia64"
	case ci.vendor == "IBM/S390":
		ci.archHint = "s390x"
	case strings.HasPrefix(ci.model, "POWER"):
		ci.archHint = "ppc64"
	case cpuArch == "8" || strings.HasPrefix(cpuArch, "AArch64"):
		ci.archHint = "aarch64"
	case cpuArch != "":
		ci.archHint = "arm"
	case flags != "":
		if strings.Contains(flags, " lm ") {
			ci.archHint = "x86_64"
		} else {
			ci.archHint = "i686"
		}
	}
	return ci, "", nil
}

// parseArchitectureLine returns the value of an "Architecture: x" line, the
// uname machine field that hwloc's gather script records in
// proc/hwloc-nofile-info of a dump.
func parseArchitectureLine(data []byte) string {
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		if k, v, ok := keyValue(string(l)); ok && k == "Architecture" {
			return v
		}
	}
	return ""
}

// parseStatusLists returns the Cpus_allowed_list and Mems_allowed_list
// values of proc/self/status ("" when absent).
func parseStatusLists(data []byte) (cpus, mems string, hasCPUs, hasMems bool) {
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		k, v, ok := keyValue(string(l))
		if !ok {
			continue
		}
		switch k {
		case "Cpus_allowed_list":
			cpus, hasCPUs = v, true
		case "Mems_allowed_list":
			mems, hasMems = v, true
		}
	}
	return
}

// parseNvidiaNUMAStatus reads proc/driver/nvidia/gpus/BUS/numa_status and
// returns the NUMA node holding that GPU's memory ("Node: 255"); ok is
// false when the GPU has none (Node: -1 or no Node line). On error it also
// returns the offending line.
func parseNvidiaNUMAStatus(data []byte) (node int, ok bool, line string, err error) {
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		k, v, found := keyValue(string(l))
		if !found || k != "Node" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, false, strings.TrimSpace(string(l)), fmt.Errorf("Node %q is not a number: %w", v, ErrSyntax)
		}
		if n < 0 {
			return 0, false, "", nil
		}
		return n, true, "", nil
	}
	return 0, false, "", nil
}
