package farm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// probeRequest is what Probe sends: distcc's protocol version 1 greeting
// and an empty argument list, which distccd reads and rejects by closing
// the connection. It compiles nothing.
const probeRequest = "DIST00000001" + "ARGC00000000"

// Probe checks that h's distccd answers, returning how long the connect
// took (a round trip). It connects, sends a request that distccd reads and
// refuses (probeRequest), and waits for distccd to answer or hang up:
// either shows a distccd reading its socket. A host that accepts the
// connection and then says nothing (a hung distccd, a port forwarded to
// nowhere) fails when timeout ends, as an unreachable one does. An error
// names the address.
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
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(c, probeRequest); err != nil {
		return 0, fmt.Errorf("farm: probe %s: %w", h.Addr(), err)
	}
	var buf [64]byte
	if _, err := c.Read(buf[:]); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("farm: probe %s: accepted the connection but did not answer the distcc protocol: %w", h.Addr(), context.Cause(ctx))
		}
		return 0, fmt.Errorf("farm: probe %s: %w", h.Addr(), err)
	}
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
