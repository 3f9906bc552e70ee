//go:build linux

package jobserver_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/numasteal/numasteal/jobserver"
)

// A build tool exports its 3 slots to a make child; the job that runs make
// holds one slot (make's implicit one).
func ExampleServer_Prepare() {
	s, err := jobserver.NewServer(3)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	cmd := exec.Command("make", "-C", "subdir")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MAKEFLAGS=k -- CC=clang"}
	if err := s.Prepare(cmd); err != nil {
		panic(err)
	}
	fmt.Println(cmd.Env[1], len(cmd.ExtraFiles))
	// Output: MAKEFLAGS=k -j3 --jobserver-auth=3,4 -- CC=clang 2
}

// Under make, a tool takes a slot for every job; the first is the implicit
// slot it always owns.
func ExampleFromEnv() {
	c, err := jobserver.FromEnv([]string{"MAKEFLAGS=-j"})
	if err != nil {
		fmt.Println(strings.TrimPrefix(err.Error(), "jobserver: "))
		return // run with our own -j
	}
	defer c.Close()
	tok, err := c.Acquire(context.Background())
	if err != nil {
		return
	}
	defer c.Release(tok)
	// Output: no jobserver in MAKEFLAGS
}
