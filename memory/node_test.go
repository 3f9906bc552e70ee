package memory

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/topology"
)

// writeNode writes node id's meminfo below a fixture root.
func writeNode(t *testing.T, root string, id int, text string) {
	t.Helper()
	dir := filepath.Join(root, "sys/devices/system/node", "node"+strconv.Itoa(id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meminfo"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadNode(t *testing.T) {
	root := t.TempDir()
	// A 6.1 kernel's meminfo of a 192 MiB node (numa-vm), cut short.
	writeNode(t, root, 1, `Node 1 MemTotal:         196108 kB
Node 1 MemFree:          150612 kB
Node 1 MemUsed:           45496 kB
Node 1 SwapCached:            0 kB
Node 1 Active(file):       1344 kB
Node 1 Inactive(file):    10260 kB
Node 1 HugePages_Total:     0
Node 1 HugePages_Free:      0
`)
	got, err := ReadNode(root, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := (NodeMemory{Node: 1, Total: 196108 << 10, Free: 150612 << 10}); got != want {
		t.Errorf("ReadNode = %+v, want %+v", got, want)
	}
	if _, err := ReadNode(root, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing node: err %v, want ErrNotExist", err)
	}
	if _, err := ReadNode(root, -1); !errors.Is(err, ErrSyntax) {
		t.Errorf("node -1: err %v, want ErrSyntax", err)
	}
	writeNode(t, root, 2, "Node 2 MemTotal: 10 kB\n")
	_, err = ReadNode(root, 2)
	var fe *FileError
	if !errors.As(err, &fe) || !strings.HasSuffix(fe.Path, "node2/meminfo") || !errors.Is(err, ErrSyntax) {
		t.Errorf("node without MemFree: err %v, want a FileError naming node2/meminfo", err)
	}
}

func TestParseNodeMeminfoRefuses(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"empty", "", "no MemTotal"},
		{"no MemFree", "Node 0 MemTotal: 100 kB\n", "no MemFree"},
		{"another node", "Node 1 MemTotal: 100 kB\nNode 1 MemFree: 10 kB\n", "is not \"Node 0"},
		{"no node prefix", "MemTotal: 100 kB\n", "is not"},
		{"no unit", "Node 0 MemTotal: 100\nNode 0 MemFree: 10 kB\n", "not a size in kB"},
		{"negative", "Node 0 MemTotal: 100 kB\nNode 0 MemFree: -1 kB\n", "not a size in kB"},
		{"not a number", "Node 0 MemTotal: 1e3 kB\nNode 0 MemFree: 10 kB\n", "not a size in kB"},
		{"overflows bytes", "Node 0 MemTotal: 9007199254740993 kB\nNode 0 MemFree: 10 kB\n", "not a size in kB"},
		{"twice", "Node 0 MemTotal: 100 kB\nNode 0 MemFree: 10 kB\nNode 0 MemFree: 10 kB\n", "twice"},
		{"free above total", "Node 0 MemTotal: 100 kB\nNode 0 MemFree: 101 kB\n", "above MemTotal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseNodeMeminfo([]byte(tt.text), 0)
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want ErrSyntax containing %q", err, tt.want)
			}
		})
	}
}

// TestReadNodeCorpus reads every node of the real machines whose dumps
// carry node meminfo files, and checks MemTotal against topology's
// reading of the same files, and MemFree of one machine against its dump.
func TestReadNodeCorpus(t *testing.T) {
	corpus.Dir(t)
	read := 0
	for _, name := range corpus.Names() {
		root := corpus.Extract(t, name)
		topo, err := topology.Discover(topology.WithRoot(root))
		if err != nil {
			t.Fatalf("%s: Discover: %v", name, err)
		}
		for _, n := range topo.Nodes {
			file := filepath.Join(root, "sys/devices/system/node", "node"+strconv.Itoa(n.ID), "meminfo")
			text, err := os.ReadFile(file)
			if err != nil {
				continue // a machine without node directories
			}
			m, err := ReadNode(root, n.ID)
			if !strings.Contains(string(text), "MemFree:") {
				// A reduced dump (64intel64-fakeKNL-SNC4-hybrid) keeps
				// MemTotal alone: its free memory is unknown.
				if err == nil || !strings.Contains(err.Error(), "no MemFree") {
					t.Errorf("%s node %d without MemFree: err %v, want \"no MemFree\"", name, n.ID, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			read++
			if m.Total != n.MemoryBytes {
				t.Errorf("%s node %d: Total %d, topology says %d", name, n.ID, m.Total, n.MemoryBytes)
			}
		}
	}
	if read == 0 {
		t.Fatal("no corpus machine has a node meminfo")
	}
	root := corpus.Extract(t, "16amd64-8n2c")
	for id, free := range map[int]int64{0: 6895672, 1: 8226932} {
		m, err := ReadNode(root, id)
		if err != nil || m.Free != free<<10 {
			t.Errorf("16amd64-8n2c node %d: %+v, %v; want MemFree %d kB", id, m, err, free)
		}
	}
	t.Logf("read %d node meminfo files", read)
}

// FuzzParseNodeMeminfo: any input gives a NodeMemory or an ErrSyntax
// error; a NodeMemory's values are sizes, Free within Total.
func FuzzParseNodeMeminfo(f *testing.F) {
	f.Add([]byte("Node 0 MemTotal:  8386704 kB\nNode 0 MemFree:   6895672 kB\nNode 0 HugePages_Total:     0\n"), 0)
	f.Add([]byte("Node 3 MemTotal: 0 kB\nNode 3 MemFree: 0 kB\n"), 3)
	f.Add([]byte("Node 0 MemFree: 1 kB\nNode 0 MemTotal: 1 kB\n\n"), 0)
	f.Fuzz(func(t *testing.T, b []byte, id int) {
		m, err := parseNodeMeminfo(b, id)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v is not ErrSyntax", err)
			}
			return
		}
		if m.Node != id || m.Free < 0 || m.Total < m.Free || m.Total > maxNodeKiB<<10 {
			t.Fatalf("parse of %q = %+v", b, m)
		}
	})
}
