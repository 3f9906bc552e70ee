package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PeerOutput is what one run of a peer program printed (ParsePeerOutput).
type PeerOutput struct {
	Name    string       `json:"name"`    // rayon, tbb, openmp
	Version string       `json:"version"` // as the peer reports it, one word
	Threads int          `json:"threads"`
	Samples []PeerSample `json:"samples"`
}

// PeerSample is one measured run of one workload in a peer program.
type PeerSample struct {
	Workload string `json:"workload"` // one of peerWorkloads
	Variant  string `json:"variant"`  // "serial" (the language's own loop) or "par"
	WallNs   uint64 `json:"wall_ns"`
	CPUNs    uint64 `json:"cpu_ns"`  // the process's CPU time
	WaitNs   uint64 `json:"wait_ns"` // its threads' time on a run queue, summed
	Check    uint64 `json:"check"`   // the answer, compared with the driver's
}

// peerWorkloads are the workloads of bench forkjoin --peers, in table order.
var peerWorkloads = []string{"fib", "cutoff", "sum", "sort", "spawn"}

// peerLines are the (workload, variant) lines a peer must print, once each.
var peerLines = []string{
	"fib serial", "fib par", "cutoff par", "sum serial", "sum par", "sort serial", "sort par", "spawn par",
}

// ParsePeerOutput parses a peer program's standard output: a header line
// "peer NAME VERSION THREADS", then one line per measurement, "WORKLOAD
// VARIANT WALL_NS CPU_NS WAIT_NS CHECK", each of peerLines exactly once.
// The format is bench/peers/common/peer.h's and rayon/src/main.rs's.
func ParsePeerOutput(b []byte) (PeerOutput, error) {
	var out PeerOutput
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if line == 1 {
			if len(f) != 4 || f[0] != "peer" {
				return PeerOutput{}, fmt.Errorf("peer output line 1: want \"peer NAME VERSION THREADS\", got %q", sc.Text())
			}
			t, err := strconv.Atoi(f[3])
			if err != nil || t < 1 {
				return PeerOutput{}, fmt.Errorf("peer output line 1: threads %q is not a positive integer", f[3])
			}
			out.Name, out.Version, out.Threads = f[1], f[2], t
			continue
		}
		if len(f) == 0 {
			continue
		}
		if len(f) != 6 {
			return PeerOutput{}, fmt.Errorf("peer output line %d: want 6 fields, got %d in %q", line, len(f), sc.Text())
		}
		key := f[0] + " " + f[1]
		if !slices.Contains(peerLines, key) {
			return PeerOutput{}, fmt.Errorf("peer output line %d: unknown measurement %q", line, key)
		}
		if seen[key] {
			return PeerOutput{}, fmt.Errorf("peer output line %d: %q twice", line, key)
		}
		seen[key] = true
		var n [4]uint64
		for i := range n {
			v, err := strconv.ParseUint(f[2+i], 10, 64)
			if err != nil {
				return PeerOutput{}, fmt.Errorf("peer output line %d: field %d: %w", line, 3+i, err)
			}
			n[i] = v
		}
		out.Samples = append(out.Samples, PeerSample{
			Workload: f[0], Variant: f[1], WallNs: n[0], CPUNs: n[1], WaitNs: n[2], Check: n[3],
		})
	}
	if err := sc.Err(); err != nil {
		return PeerOutput{}, fmt.Errorf("peer output: %w", err)
	}
	if line == 0 {
		return PeerOutput{}, fmt.Errorf("peer output: empty")
	}
	for _, k := range peerLines {
		if !seen[k] {
			return PeerOutput{}, fmt.Errorf("peer output: no %q line", k)
		}
	}
	return out, nil
}

// sample returns the line of workload and variant; ParsePeerOutput
// guarantees every one of peerLines is there.
func (p PeerOutput) sample(workload, variant string) PeerSample {
	for _, s := range p.Samples {
		if s.Workload == workload && s.Variant == variant {
			return s
		}
	}
	return PeerSample{}
}
