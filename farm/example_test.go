package farm_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/numasteal/numasteal/farm"
)

func ExampleParseHosts() {
	hosts, err := farm.ParseHosts("$DISTCC_HOSTS", "localhost/2 build1/16 build2:3700/8,lzo [fd00::7]/4")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hosts {
		fmt.Println(h, "→ DISTCC_HOSTS for one job:", h.DistccHosts())
	}
	// Output:
	// build1:3632/16 → DISTCC_HOSTS for one job: build1:3632/1
	// build2:3700/8,lzo → DISTCC_HOSTS for one job: build2:3700/1,lzo
	// [fd00::7]:3632/4 → DISTCC_HOSTS for one job: [fd00::7]:3632/1
}

func ExampleParseCompile() {
	c, ok := farm.ParseCompile(strings.Fields("gcc -O2 -Iinc -MMD -c src/a.c -o obj/a.o"))
	fmt.Println(ok, c.Source, c.Output)
	fmt.Println("local: ", strings.Join(c.PreprocessArgs("/tmp/a.i"), " "))
	fmt.Println("remote: distcc", strings.Join(c.RemoteArgs("/tmp/a.i"), " "))
	_, ok = farm.ParseCompile(strings.Fields("gcc -o prog obj/a.o obj/b.o"))
	fmt.Println("link may go remote:", ok)
	// Output:
	// true src/a.c obj/a.o
	// local:  gcc -O2 -Iinc -MMD -E src/a.c -o /tmp/a.i -MF obj/a.d -MT obj/a.o
	// remote: distcc gcc -O2 -Iinc -c /tmp/a.i -o obj/a.o
	// link may go remote: false
}

func ExampleFarm() {
	f := farm.New([]farm.Host{
		{Name: "slow", Port: farm.DefaultPort, Slots: 2},
		{Name: "fast", Port: farm.DefaultPort, Slots: 2},
	}, farm.Config{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := f.Acquire(now) // unmeasured: the first in list order
	b, _ := f.Acquire(now) // the other one: it has no load
	f.Release(a, farm.Outcome{OK: true, Bytes: 20_000, Elapsed: time.Second}, now)
	f.Release(b, farm.Outcome{OK: true, Bytes: 80_000, Elapsed: time.Second}, now)
	c, _ := f.Acquire(now)
	fmt.Println(a.Host.Name, b.Host.Name, "then", c.Host.Name)
	f.Release(c, farm.Outcome{HostFault: true}, now)
	for _, s := range f.Stats(now) {
		fmt.Printf("%s: jobs %d failures %d down %v\n", s.Host.Name, s.Jobs, s.Failures, s.Down)
	}
	// Output:
	// slow fast then fast
	// slow: jobs 1 failures 0 down false
	// fast: jobs 1 failures 1 down true
}
