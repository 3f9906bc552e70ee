package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// availableMemory returns the bytes this process may still use: /proc's
// MemAvailable, lowered to memory.max − memory.current of its cgroup (v2)
// when that is set. 0 when nothing can be read.
func availableMemory(root string) int64 {
	avail := int64(0)
	if b, err := os.ReadFile(filepath.Join(root, "proc/meminfo")); err == nil {
		avail = parseMeminfo(b, "MemAvailable:")
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "0::"); ok {
				dir := filepath.Join(root, "sys/fs/cgroup", rest)
				maxB, err1 := os.ReadFile(filepath.Join(dir, "memory.max"))
				curB, err2 := os.ReadFile(filepath.Join(dir, "memory.current"))
				m, e1 := strconv.ParseInt(string(bytes.TrimSpace(maxB)), 10, 64)
				c, e2 := strconv.ParseInt(string(bytes.TrimSpace(curB)), 10, 64)
				if err1 == nil && err2 == nil && e1 == nil && e2 == nil && m > c {
					if avail == 0 || m-c < avail {
						avail = m - c
					}
				}
			}
		}
	}
	return avail
}

// parseMeminfo returns the value of key ("MemAvailable:") in bytes.
func parseMeminfo(b []byte, key string) int64 {
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if v, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return v << 10 // kB
				}
			}
		}
	}
	return 0
}
