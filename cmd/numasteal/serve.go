package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/launch"
	"github.com/numasteal/numasteal/launch/daemon"
	"github.com/numasteal/numasteal/metrics"
)

// runServe is "numasteal serve": the per-user daemon of the launchers
// (package launch/daemon). A launcher starts it when none answers.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal serve", stderr)
	slots := fs.Int("slots", 0, "jobs that run at once (0: the usable CPUs)")
	mem := fs.String("mem", "", "most memory the running jobs may hold together, e.g. 6G or 800M (default: what the machine and the cgroups allow, read as builds run)")
	reserve := fs.String("reserve", "", "memory kept free of jobs, e.g. 256M (default: a sixteenth of the limit, 32 to 512 MiB)")
	idle := fs.Duration("idle", 5*time.Minute, "exit after this long with no launcher connected (0: never)")
	trace := fs.String("trace", "", "write the Chrome trace of every admitted job to `file` on exit")
	history := fs.String("history", "", "peak-RSS history `file` (default: peak-rss beside the socket)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics (slots, running and waiting jobs, memory) at `ADDR`/metrics, e.g. 127.0.0.1:9465")
	farmHosts := fs.String("farm", "", "compile farm: distcc `HOSTS` (\"host[:port]/N ...\"), a hosts file, env for $DISTCC_HOSTS, or none; compiles that find no free slot go there (default: $DISTCC_HOSTS when set)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	f, code, ok := serveFarm(ctx, *farmHosts, fs.Changed("farm"), stderr)
	if !ok {
		return code
	}
	cfg := daemon.Config{
		Paths: launch.PathsFromEnv(os.Getenv), Slots: *slots, Idle: *idle,
		Trace: *trace, History: *history, Log: stderr, Farm: f,
	}
	if *idle == 0 {
		cfg.Idle = -1
	}
	if *mem != "" {
		b, err := parseBytes(*mem)
		if err != nil {
			fmt.Fprintf(stderr, "numasteal serve: --mem: %v\n", err)
			return exitUsage
		}
		cfg.Mem = b
	}
	if *reserve != "" {
		b, err := parseBytes(*reserve)
		if err != nil {
			fmt.Fprintf(stderr, "numasteal serve: --reserve: %v\n", err)
			return exitUsage
		}
		cfg.Reserve = b
	}
	if cfg.Paths.Unusable != "" {
		fmt.Fprintf(stderr, "numasteal serve: warning: %s; using %s\n", cfg.Paths.Unusable, cfg.Paths.Dir)
	}
	if *metricsAddr != "" {
		ms := &metricsServer{}
		status := func() (daemon.Status, error) { return daemonStatus(cfg.Paths.Socket) }
		if err := ms.start(*metricsAddr, "numasteal serve", stderr, metrics.NewDaemonCollector(status)); err != nil {
			fmt.Fprintf(stderr, "numasteal serve: %v\n", err)
			return exitUsage
		}
		defer ms.close()
	}
	if err := daemon.Serve(ctx, cfg); err != nil {
		if errors.Is(err, daemon.ErrRunning) {
			fmt.Fprintf(stderr, "numasteal serve: %v\n", err)
			return exitOK
		}
		fmt.Fprintf(stderr, "numasteal serve: %v\n", err)
		return exitFail
	}
	return exitOK
}

// serveFarm returns the daemon's farm, nil for none: the hosts of spec
// ("none": no farm), or when the flag was not given those of
// $DISTCC_HOSTS if it names any (read as distcc reads it: bad entries are
// skipped with a warning, and a list of no remote host is no farm). The
// hosts are probed as "numasteal run --farm" probes them: those that do
// not answer start down, retried after their back-off. ok is false when
// the daemon must stop with code (a bad --farm).
func serveFarm(ctx context.Context, spec string, given bool, stderr io.Writer) (f *farm.Farm, code int, ok bool) {
	warn := func(err error) { fmt.Fprintf(stderr, "numasteal serve: warning: %v (skipped, as distcc does)\n", err) }
	switch {
	case spec == "none":
		return nil, exitOK, true
	case !given:
		if strings.TrimSpace(os.Getenv(farm.EnvHosts)) == "" {
			return nil, exitOK, true
		}
		hosts, err := farm.LoadHosts("env", os.Getenv, warn)
		if err != nil {
			fmt.Fprintf(stderr, "numasteal serve: no farm: %v\n", err)
			return nil, exitOK, true
		}
		f = farm.New(hosts, farm.Config{})
	default:
		hosts, err := farm.LoadHosts(spec, os.Getenv, warn)
		if err != nil {
			fmt.Fprintf(stderr, "numasteal serve: --farm: %v\n", err)
			return nil, exitUsage, false
		}
		f = farm.New(hosts, farm.Config{})
	}
	hosts := f.Hosts()
	for i, err := range f.ProbeAll(ctx, probeTimeout, time.Now()) {
		if err != nil {
			fmt.Fprintf(stderr, "numasteal serve: farm host %s is down: %v\n", hosts[i].Addr(), err)
		}
	}
	return f, exitOK, true
}

// parseBytes parses "800M", "6G", "512K" or a number of bytes.
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
