package guest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/internal/vmtest"
	"github.com/numasteal/numasteal/launch"
	"github.com/numasteal/numasteal/supervise"
)

// childEnv makes the test binary, started as a child, do one thing instead
// of running the tests: "report" (TestStartPinned) prints "cpu=N
// allowed=LIST"; "launch" is the launcher, and "hog" (TestPlaceByNodeMemory)
// and "alloc" (TestMemoryLimitV2) the compilers it runs; "supervise" is
// TestTaskMemoryV2Killed's supervisor.
const childEnv = "NUMASTEAL_GUEST_CHILD"

func TestMain(m *testing.M) {
	supervise.MaybeWatchdog() // the watchdog of supervisedChild's Supervisor
	switch os.Getenv(childEnv) {
	case "supervise":
		os.Exit(supervisedChild())
	case "launch":
		os.Exit(launch.Run(launch.Config{Args: os.Args[1:], Prog: "guest launcher", Serve: []string{"/bin/false"}}))
	case "hog":
		os.Exit(hog(os.Args[1:]))
	case "alloc":
		os.Exit(alloc(os.Args[1:]))
	case "report":
		cpu, _, err := affinity.CurrentCPU()
		allowed, err2 := affinity.Allowed()
		if err != nil || err2 != nil {
			fmt.Println(err, err2)
			os.Exit(1)
		}
		fmt.Printf("cpu=%d allowed=%s\n", cpu, allowed)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// layout returns the layout the VM was booted with, or skips the test
// outside a VM.
func layout(t *testing.T) vmtest.Layout {
	t.Helper()
	l, inVM, err := vmtest.FromEnv()
	if !inVM {
		t.Skipf("guest check: runs only inside numa-vm ($%s=1), where internal/vmtest's TestVM starts it", vmtest.EnvInVM)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// expect returns the layout's nodes and CPUs in Linux's numbering.
func expect(t *testing.T, l vmtest.Layout) ([]vmtest.Node, []vmtest.CPU) {
	t.Helper()
	nodes, err := l.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := l.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	return nodes, cpus
}
