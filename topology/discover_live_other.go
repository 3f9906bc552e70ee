//go:build !linux

package topology

import (
	"errors"
	"runtime"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// schedAffinity is Linux-only: elsewhere a live Discover fails here, after
// the sysfs reads that already failed for lack of /sys.
func schedAffinity() (cpuset.Set, error) {
	return cpuset.Set{}, errors.New("topology: the affinity mask can only be read on Linux")
}

// liveArch returns GOARCH where uname is not available.
func liveArch() string { return runtime.GOARCH }
