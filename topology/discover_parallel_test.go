package topology_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/topology"
)

// bigTree writes a machine of ncpu CPUs (2 threads per core, 2 cores per
// package, one node per package) into a temporary directory: enough CPUs
// and nodes for Discover to read them on several goroutines.
func bigTree(t testing.TB, ncpu int, edits treeEdits) string {
	t.Helper()
	files := treeEdits{
		"sys/devices/system/cpu/online":   fmt.Sprintf("0-%d\n", ncpu-1),
		"sys/devices/system/cpu/possible": fmt.Sprintf("0-%d\n", ncpu-1),
	}
	const perPkg = 4
	npkg := ncpu / perPkg
	var online string
	for c := range ncpu {
		d := fmt.Sprintf("sys/devices/system/cpu/cpu%d/", c)
		core, pkg := c/2, c/perPkg
		files[d+"topology/core_cpus_list"] = fmt.Sprintf("%d-%d\n", core*2, core*2+1)
		files[d+"topology/core_id"] = fmt.Sprintf("%d\n", core%(perPkg/2))
		files[d+"topology/package_cpus_list"] = fmt.Sprintf("%d-%d\n", pkg*perPkg, pkg*perPkg+perPkg-1)
		files[d+"topology/physical_package_id"] = fmt.Sprintf("%d\n", pkg)
	}
	for n := range npkg {
		d := fmt.Sprintf("sys/devices/system/node/node%d/", n)
		files[d+"cpulist"] = fmt.Sprintf("%d-%d\n", n*perPkg, n*perPkg+perPkg-1)
		files[d+"meminfo"] = fmt.Sprintf("Node %d MemTotal: %d kB\n", n, 1<<20)
		row := ""
		for m := range npkg {
			dist := 20
			if m == n {
				dist = 10
			}
			row += fmt.Sprintf("%d ", dist)
		}
		files[d+"distance"] = row + "\n"
		if online != "" {
			online += ","
		}
		online += fmt.Sprint(n)
	}
	files["sys/devices/system/node/online"] = online + "\n"
	for p, c := range edits {
		files[p] = c
	}
	root := t.TempDir()
	for p, c := range files {
		if c == rm {
			continue
		}
		target := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestDiscoverParallelErrors breaks files that are read on different
// goroutines and checks that the error is always the one of the lowest
// CPU or node, whatever the scheduling.
func TestDiscoverParallelErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	for _, tt := range []struct {
		name  string
		edits treeEdits
		path  string
	}{
		{"core ids", treeEdits{
			"sys/devices/system/cpu/cpu201/topology/core_id": "x\n",
			"sys/devices/system/cpu/cpu77/topology/core_id":  "y\n",
			"sys/devices/system/cpu/cpu130/topology/core_id": "z\n",
		}, "sys/devices/system/cpu/cpu77/topology/core_id"},
		{"meminfo", treeEdits{
			"sys/devices/system/node/node53/meminfo": "Node 53 MemTotal: x kB\n",
			"sys/devices/system/node/node9/meminfo":  "Node 9 MemTotal: y kB\n",
			"sys/devices/system/node/node10/meminfo": "Node 10 MemTotal: z kB\n",
		}, "sys/devices/system/node/node9/meminfo"},
		{"distance", treeEdits{
			"sys/devices/system/node/node55/distance": "10 x\n",
			"sys/devices/system/node/node2/distance":  "10 y\n",
			"sys/devices/system/node/node3/distance":  "10 z\n",
		}, "sys/devices/system/node/node2/distance"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := bigTree(t, 256, tt.edits)
			for range 10 {
				_, err := topology.Discover(topology.WithRoot(root))
				var fe *topology.FileError
				if !errors.As(err, &fe) || fe.Path != tt.path {
					t.Fatalf("Discover error = %v, want one naming %s", err, tt.path)
				}
			}
		})
	}
}

// TestDiscoverConcurrent runs Discovers on several goroutines at once
// (under -race this checks that the parallel readers share nothing they
// write) and checks that they all agree.
func TestDiscoverConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	root := bigTree(t, 256, nil)
	want, err := topology.Discover(topology.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Packages) != 64 || len(want.Cores) != 128 || len(want.Nodes) != 64 || want.Distances.Between(3, 4) != 20 {
		t.Fatalf("big tree read as %d packages, %d cores, %d nodes", len(want.Packages), len(want.Cores), len(want.Nodes))
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			got, err := topology.Discover(topology.WithRoot(root))
			switch {
			case err != nil:
				errs[i] = err
			case !got.Usable.Equal(want.Usable) || len(got.Cores) != len(want.Cores) || got.NodeOf(200) != want.NodeOf(200):
				errs[i] = fmt.Errorf("goroutine %d read a different machine", i)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}
