package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
	"github.com/numasteal/numasteal/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The generated project builds through the runtime, and the program it
// produces prints the expected sum.
func TestBuildAndRun(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (.ci/run installs it)")
	}
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const n = 32
	dir := t.TempDir()
	bin, rep, err := Build(context.Background(), rt, dir, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if len(rep.Tasks) != n+2 {
		t.Errorf("%d tasks, want %d compiles and a link", len(rep.Tasks), n+2)
	}
	link := rep.Tasks[len(rep.Tasks)-1]
	for _, tr := range rep.Tasks[:n+1] {
		if tr.Proc.End.After(link.Proc.Start) {
			t.Errorf("%s ended after the link started", tr.Task.ID)
		}
		// Placed on a CPU, and confined to it or, while the build
		// left a CPU of its node free, to the node's CPUs.
		node, _ := rt.Topology().Node(tr.Proc.Node)
		if tr.Proc.CPU < 0 || !tr.Proc.Affinity.Contains(tr.Proc.CPU) ||
			(tr.Proc.Affinity.Len() > 1 && !tr.Proc.Affinity.Equal(node.Usable)) {
			t.Errorf("%s: CPU %d affinity %q, want that CPU or node %d's CPUs %s", tr.Task.ID, tr.Proc.CPU, tr.Proc.Affinity, tr.Proc.Node, node.Usable)
		}
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running %s: %v", bin, err)
	}
	if string(out) != Want(n) {
		t.Fatalf("program printed %q, want %q", out, Want(n))
	}

	// A broken module fails its compile; the link is skipped, and with
	// keep-going every other module still compiles.
	if err := os.WriteFile(filepath.Join(dir, "mod05.c"), []byte("int broken(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep2, err := buildrun.Run(context.Background(), rt, Graph(dir, n), buildrun.Options{KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rep2.Close()
	if c := rep2.Counts; c[buildgraph.Failed] != 1 || c[buildgraph.Skipped] != 1 || c[buildgraph.Succeeded] != n {
		t.Fatalf("outcomes %v", c)
	}
	f := rep2.Failed()[0]
	msg, _ := f.Proc.Stderr.Bytes()
	if f.Task.ID != "mod05.o" || !strings.Contains(string(msg), "mod05.c") {
		t.Errorf("failed %s with %q", f.Task.ID, msg)
	}
}
