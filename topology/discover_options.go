package topology

import (
	"path/filepath"

	"go.uber.org/zap"
)

// An Option configures Discover.
type Option interface {
	apply(*config)
}

// optionFunc adapts a function to Option, as zap's options do.
type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is what the options set. Its zero value is not used directly:
// defaultConfig fills the defaults first.
type config struct {
	root   string
	logger *zap.Logger
}

func defaultConfig() config {
	return config{root: "/", logger: zap.NewNop()}
}

// WithRoot makes Discover read dir/sys/... and dir/proc/... instead of the
// live machine's /sys and /proc, the way hwloc's HWLOC_FSROOT does. Any root
// other than "/" describes a machine that is not the one the process runs
// on: the affinity mask and CPUID are then not consulted, and every cgroup
// file is looked up inside dir as well.
func WithRoot(dir string) Option {
	return optionFunc(func(c *config) {
		if dir == "" {
			dir = "/"
		}
		c.root = filepath.Clean(dir)
	})
}

// WithLogger makes Discover log, at debug level, each fallback it takes
// (a missing file, a dropped NUMA node). A nil logger logs nothing.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l == nil {
			l = zap.NewNop()
		}
		c.logger = l
	})
}
