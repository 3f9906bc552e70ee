package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/metrics"
	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/runtime"
)

// metricsServer serves /metrics during a "numasteal run --metrics ADDR":
// the runtime's counters and the process runner's slots (package metrics),
// with client_golang's Go and process collectors. A nil *metricsServer
// (no --metrics) does nothing.
type metricsServer struct {
	reg  *prometheus.Registry
	srv  *http.Server
	done chan struct{}

	mu       sync.Mutex
	progress buildgraph.Progress // the last one the run reported
}

// serveMetrics listens on addr and serves rt's metrics there until close;
// it prints the address on stderr (useful with port 0). An empty addr
// returns nil.
func serveMetrics(addr string, rt *runtime.Runtime, stderr io.Writer) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	m := &metricsServer{}
	if err := m.start(addr, "numasteal run", stderr, metrics.NewRuntimeCollector(rt), metrics.NewBuildCollector(m.lastProgress)); err != nil {
		return nil, err
	}
	return m, nil
}

// start serves cs, with the Go and process collectors, on addr until
// close; prog names the command in messages.
func (m *metricsServer) start(addr, prog string, stderr io.Writer, cs ...prometheus.Collector) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics: %w", err)
	}
	m.reg, m.done = prometheus.NewRegistry(), make(chan struct{})
	m.reg.MustRegister(append(cs,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "%s: --metrics: %v\n", prog, err)
		}
	}()
	fmt.Fprintf(stderr, "%s: metrics at http://%s/metrics\n", prog, ln.Addr())
	return nil
}

// watch is the buildrun.Options.Runner callback: the run's process runner
// joins the metrics.
func (m *metricsServer) watch(r *proc.Runner) {
	if m != nil {
		m.reg.MustRegister(metrics.NewRunnerCollector(r))
	}
}

// progressed wraps the run's Progress callback: the build's metrics read
// the progress it was last given.
func (m *metricsServer) progressed(next func(buildrun.Status)) func(buildrun.Status) {
	if m == nil {
		return next
	}
	return func(s buildrun.Status) {
		m.mu.Lock()
		m.progress = s.Progress
		m.mu.Unlock()
		next(s)
	}
}

func (m *metricsServer) lastProgress() buildgraph.Progress {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.progress
}

// watchFarm adds the farm's hosts to the metrics; nil does nothing.
func (m *metricsServer) watchFarm(f *farm.Farm) {
	if m != nil && f != nil {
		m.reg.MustRegister(metrics.NewFarmCollector(f))
	}
}

// watchMemory adds the run's memory governor to the metrics; nil (no
// --metrics, or no governor) does nothing.
func (m *metricsServer) watchMemory(o *buildrun.MemoryOptions) {
	if m != nil && o != nil {
		o.Watch = func(stats func() buildrun.MemoryStats) {
			m.reg.MustRegister(metrics.NewBuildMemoryCollector(stats))
		}
	}
}

// close stops serving, letting a scrape under way finish for a moment.
func (m *metricsServer) close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m.srv.Shutdown(ctx) != nil {
		m.srv.Close()
	}
	<-m.done
}
