package farm

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/numasteal/numasteal/internal/distcctest"
)

// listen returns a host on a loopback listener whose connections serve
// runs on.
func listen(t *testing.T, serve func(net.Conn)) Host {
	t.Helper()
	_, port, _ := net.SplitHostPort(distcctest.Serve(t, serve))
	p, _ := strconv.Atoi(port)
	return Host{Name: "127.0.0.1", Port: p, Slots: 2}
}

// ProbeAll records the round trip of a host that answers as distccd does
// (it reads the request and hangs up), and takes down a host that refuses
// and one that accepts and never answers.
func TestProbeAll(t *testing.T) {
	got := make(chan string, 1)
	up := listen(t, func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, len(probeRequest))
		io.ReadFull(c, buf)
		got <- string(buf)
	})
	hang := make(chan struct{})
	defer close(hang)
	silent := listen(t, func(c net.Conn) {
		defer c.Close()
		<-hang
	})
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := Host{Name: "127.0.0.1", Port: dead.Addr().(*net.TCPAddr).Port, Slots: 2}
	dead.Close()

	f := New([]Host{up, down, silent}, Config{})
	now := time.Now()
	errs := f.ProbeAll(context.Background(), time.Second, now)
	if errs[0] != nil || errs[1] == nil || errs[2] == nil {
		t.Fatalf("probe errors %v, want the second and third", errs)
	}
	if req := <-got; req != probeRequest {
		t.Errorf("the host got %q, want the distcc greeting %q", req, probeRequest)
	}
	if !strings.Contains(errs[2].Error(), "did not answer") {
		t.Errorf("silent host: %v, want a word that it did not answer", errs[2])
	}
	st := f.Stats(now)
	if st[0].Down || st[0].RTT <= 0 {
		t.Errorf("answering host: %+v", st[0])
	}
	for _, i := range []int{1, 2} {
		if !st[i].Down || st[i].Failures != 1 || st[i].Running != 0 {
			t.Errorf("host %d: %+v, want down after one failure", i, st[i])
		}
	}
}
