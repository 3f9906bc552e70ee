package affinity

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv makes the test binary, started as a child by the StartPinned
// tests, report its own placement instead of running the tests.
const childEnv = "AFFINITY_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "report" {
		os.Exit(reportPlacement())
	}
	goleak.VerifyTestMain(m)
}

// reportPlacement prints "allowed=LIST cpu=N policy=MODE[:NODES]", the
// child's view of itself, and returns the exit status.
func reportPlacement() int {
	allowed, err := Allowed()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cpu, _, err := CurrentCPU()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Where memory policies are refused (see lockForPolicy) the policy is
	// reported as "?" and not checked.
	policy := "?"
	if pol, err := GetMemPolicy(); err == nil {
		policy = pol.String()
	}
	fmt.Printf("allowed=%s cpu=%d policy=%s\n", allowed, cpu, policy)
	return 0
}
