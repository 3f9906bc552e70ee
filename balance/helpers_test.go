package balance_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/domains"
)

// fakeLoad is a balance.Load written as a string: "4:R 5:R+1 0:+2" means
// CPU 4 runs a task, CPU 5 runs one and has one queued, CPU 0 runs
// nothing and has two queued; unnamed CPUs are idle.
type fakeLoad struct {
	queued  map[int]int
	running map[int]bool
}

func parseLoad(t *testing.T, spec string) *fakeLoad {
	t.Helper()
	l := &fakeLoad{queued: map[int]int{}, running: map[int]bool{}}
	for _, f := range strings.Fields(spec) {
		cpu, st, ok := strings.Cut(f, ":")
		c, err := strconv.Atoi(cpu)
		if !ok || err != nil {
			t.Fatalf("bad load %q", f)
		}
		if strings.HasPrefix(st, "R") {
			l.running[c] = true
			st = st[1:]
		}
		if st != "" {
			q, err := strconv.Atoi(strings.TrimPrefix(st, "+"))
			if err != nil {
				t.Fatalf("bad load %q", f)
			}
			l.queued[c] = q
		}
	}
	return l
}

func (l *fakeLoad) Queued(cpu int) int   { return l.queued[cpu] }
func (l *fakeLoad) Running(cpu int) bool { return l.running[cpu] }

// machine reads a corpus machine and its domains.
func machine(t *testing.T, name string) (*topology.Topology, *domains.Domains) {
	t.Helper()
	topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	doms, err := domains.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	return topo, doms
}

// bind binds the policy called policy to every usable CPU of machine name.
func bind(t *testing.T, name, policy string) balance.Balancer {
	t.Helper()
	topo, doms := machine(t, name)
	p, err := balance.ByName(policy)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Bind(topo, doms, topo.Usable, 1)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// victims runs one pass of th (without Done, so no interval is armed)
// and returns the victim CPUs of each step.
func victims(th balance.Thief, load balance.Load, s balance.Search, max int) [][]int {
	out := make([][]int, th.Steps())
	buf := make([]balance.Victim, 0, max)
	for step := range th.Steps() {
		out[step] = []int{}
		for _, v := range th.Victims(buf[:0], step, load, s) {
			out[step] = append(out[step], v.CPU)
		}
	}
	return out
}
