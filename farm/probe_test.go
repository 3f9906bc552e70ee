package farm

import (
	"context"
	"net"
	"testing"
	"time"
)

// ProbeAll records the round trip of a host that listens and takes down a
// host that refuses.
func TestProbeAll(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := Host{Name: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, Slots: 2}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := Host{Name: "127.0.0.1", Port: dead.Addr().(*net.TCPAddr).Port, Slots: 2}
	dead.Close()
	defer l.Close()

	f := New([]Host{up, down}, Config{})
	now := time.Now()
	errs := f.ProbeAll(context.Background(), time.Second, now)
	if errs[0] != nil || errs[1] == nil {
		t.Fatalf("probe errors %v, want only the second", errs)
	}
	st := f.Stats(now)
	if st[0].Down || st[0].RTT <= 0 {
		t.Errorf("listening host: %+v", st[0])
	}
	if !st[1].Down || st[1].Failures != 1 || st[1].Running != 0 {
		t.Errorf("refusing host: %+v", st[1])
	}
}
