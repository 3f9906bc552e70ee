package farm

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Probe connects to h's distccd port and closes the connection at once,
// returning how long the connect took (a round trip). distccd counts such
// a connection as a client that sent nothing, which is harmless. An error
// means the host is unreachable or refuses: it names the address.
func Probe(ctx context.Context, h Host, timeout time.Duration) (time.Duration, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var d net.Dialer
	start := time.Now()
	c, err := d.DialContext(ctx, "tcp", h.Addr())
	if err != nil {
		return 0, fmt.Errorf("farm: probe %s: %w", h.Addr(), err)
	}
	rtt := time.Since(start)
	c.Close()
	return rtt, nil
}

// ProbeAll probes every host of f concurrently, records the round trips
// of those that answer (SetRTT), and marks those that do not as failed
// (down for the back-off) at now. It returns the errors by host index
// (nil for a host that answered).
func (f *Farm) ProbeAll(ctx context.Context, timeout time.Duration, now time.Time) []error {
	errs := make([]error, len(f.hosts))
	done := make(chan int, len(f.hosts))
	for i, h := range f.Hosts() {
		go func() {
			rtt, err := Probe(ctx, h, timeout)
			if err == nil {
				f.SetRTT(i, rtt)
			}
			errs[i] = err
			done <- i
		}()
	}
	for range f.hosts {
		<-done
	}
	for i, err := range errs {
		if err != nil {
			f.mu.Lock()
			f.hosts[i].running++ // Release undoes it
			f.mu.Unlock()
			f.Release(Lease{Index: i, Host: f.hosts[i].Host, Start: now}, Outcome{HostFault: true, Err: err}, now)
		}
	}
	return errs
}
