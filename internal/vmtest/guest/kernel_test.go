package guest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// readSys returns a sysfs file's text, trimmed.
func readSys(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/devices/system", path))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// readSysList parses a sysfs cpulist file.
func readSysList(t *testing.T, path string) cpuset.Set {
	t.Helper()
	s, err := cpuset.Parse(readSys(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// TestKernelLayout checks that the kernel reports the layout the VM was
// asked for, straight from sysfs. It separates a numa-vm problem from a
// numasteal one: if it fails, the Discover check below means nothing.
func TestKernelLayout(t *testing.T) {
	l := layout(t)
	nodes, cpus := expect(t, l)
	if got := readSysList(t, "node/online"); !got.Equal(cpuset.Range(0, len(nodes)-1)) {
		t.Errorf("node/online = %s, want 0-%d", got, len(nodes)-1)
	}
	var hasCPU, hasMem cpuset.Set
	for _, n := range nodes {
		dir := "node/node" + strconv.Itoa(n.ID)
		if got := readSysList(t, dir+"/cpulist"); !got.Equal(n.CPUs) {
			t.Errorf("%s/cpulist = %q, want %q", dir, got, n.CPUs)
		}
		var row []string
		for _, m := range nodes {
			row = append(row, strconv.Itoa(l.Distance(n.QEMU, m.QEMU)))
		}
		if got, want := readSys(t, dir+"/distance"), strings.Join(row, " "); got != want {
			t.Errorf("%s/distance = %q, want %q", dir, got, want)
		}
		if !n.CPUs.IsEmpty() {
			hasCPU.Add(n.ID)
		}
		if n.MemMB > 0 {
			hasMem.Add(n.ID)
		}
	}
	if got := readSysList(t, "node/has_cpu"); !got.Equal(hasCPU) {
		t.Errorf("node/has_cpu = %s, want %s", got, hasCPU)
	}
	if got := readSysList(t, "node/has_normal_memory"); !got.Equal(hasMem) {
		t.Errorf("node/has_normal_memory = %s, want %s", got, hasMem)
	}
	for _, c := range cpus {
		dir := "cpu/cpu" + strconv.Itoa(c.ID) + "/topology"
		for file, want := range map[string]int{"physical_package_id": c.PackageID, "die_id": c.DieID, "core_id": c.CoreID} {
			if got := readSys(t, dir+"/"+file); got != strconv.Itoa(want) {
				t.Errorf("%s/%s = %s, want %d", dir, file, got, want)
			}
		}
		if got := readSysList(t, dir+"/thread_siblings_list"); !got.Equal(c.Siblings) {
			t.Errorf("%s/thread_siblings_list = %s, want %s", dir, got, c.Siblings)
		}
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	mems := "?"
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Mems_allowed_list:"); ok {
			mems = strings.TrimSpace(v)
		}
	}
	t.Logf("kernel: %d CPUs, nodes %s, has_cpu %s, has_normal_memory %s, Mems_allowed_list %s",
		len(cpus), readSys(t, "node/online"), hasCPU, hasMem, mems)
}
