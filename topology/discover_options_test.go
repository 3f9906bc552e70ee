package topology_test

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/numasteal/numasteal/topology"
)

func TestWithLogger(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	root := tinyTree(t, treeEdits{"sys/devices/system/node": rm})
	topo, err := topology.Discover(topology.WithRoot(root), topology.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Notes) == 0 {
		t.Fatal("no notes for a tree without a node directory")
	}
	var logged []string
	for _, e := range logs.All() {
		logged = append(logged, e.Message)
	}
	for _, n := range topo.Notes {
		if !strings.Contains(strings.Join(logged, "\n"), n) {
			t.Errorf("note %q was not logged (logged %q)", n, logged)
		}
	}
	// A nil logger and a nil option are harmless.
	if _, err := topology.Discover(topology.WithRoot(root), topology.WithLogger(nil), nil); err != nil {
		t.Fatal(err)
	}
}

func TestWithRootClean(t *testing.T) {
	topo, err := topology.Discover(topology.WithRoot("testdata/tiny/"))
	if err != nil {
		t.Fatal(err)
	}
	if topo.Root != "testdata/tiny" || topo.Live {
		t.Errorf("Root %q Live %v", topo.Root, topo.Live)
	}
}
