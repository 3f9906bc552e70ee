package daemon

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/numasteal/numasteal/launch"
)

// daemonEnv, set, makes the test binary a daemon of one slot on the
// socket $NUMASTEAL_SOCKET until SIGTERM, for the benchmarks that measure
// a daemon as a process of its own.
const daemonEnv = "NUMASTEAL_TEST_DAEMON"

func TestMain(m *testing.M) {
	if os.Getenv(daemonEnv) != "" {
		os.Exit(runTestDaemon())
	}
	os.Exit(m.Run())
}

func runTestDaemon() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg := Config{Paths: launch.PathsFromEnv(os.Getenv), Slots: 1, Mem: 1 << 30, Idle: -1}
	if err := Serve(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "test daemon: %v\n", err)
		return 1
	}
	return 0
}
