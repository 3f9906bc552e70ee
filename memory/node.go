package memory

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// NodeMemory is one NUMA node's memory, from its
// /sys/devices/system/node/nodeN/meminfo.
//
// Free is the node's MemFree, without its page cache. When a node's free
// pages fall below its low watermark, the page allocator takes the next
// node's free page rather than reclaim this node's page cache: with
// vm.zone_reclaim_mode 0, every distribution's default,
// get_page_from_freelist moves on to the next zone of the zonelist, and
// only when every node is short does kswapd reclaim. A memory policy that
// prefers a node (MPOL_PREFERRED) walks the same zonelist from that node.
// So the memory a job can have on a node without spilling to a remote one
// is MemFree, less the node's low watermark (not subtracted: about 0.1%
// of a large node, a few percent of a VM's small one); the reclaimable
// file pages (Inactive(file)), which the machine's MemAvailable counts,
// do not count here.
type NodeMemory struct {
	// Node is the node's id.
	Node int
	// Total is MemTotal: the memory the kernel manages on the node; 0
	// for a memory-less node.
	Total int64
	// Free is MemFree.
	Free int64
}

// ReadNode reads node id's meminfo below root ("/" for the live machine,
// a fixture tree in tests).
func ReadNode(root string, id int) (NodeMemory, error) {
	if id < 0 {
		return NodeMemory{}, fmt.Errorf("memory: node %d: %w", id, ErrSyntax)
	}
	rel := filepath.Join("sys/devices/system/node", "node"+strconv.Itoa(id), "meminfo")
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return NodeMemory{}, fmt.Errorf("memory: %w", err)
	}
	m, err := parseNodeMeminfo(b, id)
	if err != nil {
		return NodeMemory{}, &FileError{Path: filepath.Join(root, rel), Err: err}
	}
	return m, nil
}

// parseNodeMeminfo parses node id's meminfo, whose lines are the
// machine's /proc/meminfo lines prefixed with the node:
//
//	Node 0 MemTotal:       8386704 kB
//	Node 0 MemFree:        6895672 kB
//
// Every line must name node id; MemTotal and MemFree must be there once
// each, in kB, and MemFree cannot exceed MemTotal. Other lines are not
// read beyond their node: their keys change between kernels.
func parseNodeMeminfo(b []byte, id int) (NodeMemory, error) {
	want := strconv.Itoa(id)
	m := NodeMemory{Node: id}
	var seenTotal, seenFree bool
	for rest := b; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 || string(f[0]) != "Node" || string(f[1]) != want {
			return NodeMemory{}, fmt.Errorf("line %q is not \"Node %d KEY: VALUE\": %w", clipLine(line), id, ErrSyntax)
		}
		var v *int64
		var seen *bool
		switch string(f[2]) {
		case "MemTotal:":
			v, seen = &m.Total, &seenTotal
		case "MemFree:":
			v, seen = &m.Free, &seenFree
		default:
			continue
		}
		if *seen {
			return NodeMemory{}, fmt.Errorf("%s appears twice: %w", f[2], ErrSyntax)
		}
		n, err := strconv.ParseInt(string(f[3]), 10, 64)
		if err != nil || n < 0 || n > maxNodeKiB || len(f) != 5 || string(f[4]) != "kB" {
			return NodeMemory{}, fmt.Errorf("line %q: not a size in kB: %w", clipLine(line), ErrSyntax)
		}
		*v, *seen = n<<10, true
	}
	switch {
	case !seenTotal:
		return NodeMemory{}, fmt.Errorf("no MemTotal line: %w", ErrSyntax)
	case !seenFree:
		return NodeMemory{}, fmt.Errorf("no MemFree line: %w", ErrSyntax)
	case m.Free > m.Total:
		return NodeMemory{}, fmt.Errorf("MemFree %d kB above MemTotal %d kB: %w", m.Free>>10, m.Total>>10, ErrSyntax)
	}
	return m, nil
}

// maxNodeKiB bounds a node's memory (an exabyte, in kB), so that no value
// overflows when it becomes bytes.
const maxNodeKiB = 1 << 50

// clipLine shortens a line quoted in an error.
func clipLine(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
