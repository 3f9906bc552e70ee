package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/numasteal/numasteal/buildrun"
	"github.com/numasteal/numasteal/memory"
)

// runMemory returns the memory options of a run: a governor of this
// process's memory cgroups and of the machine, with --mem (MiB) as its
// budget. When the memory cannot be read it says so on stderr and returns
// nil: the run goes on, admitted by slots and declared memory alone.
func runMemory(memMB int, stderr io.Writer) *buildrun.MemoryOptions {
	src, err := memory.Open("/", 0)
	if err == nil {
		_, err = src.Sample()
	}
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: memory is not watched: %v\n", err)
		return nil
	}
	return &buildrun.MemoryOptions{Source: src, Thresholds: memory.Thresholds{Budget: int64(memMB) << 20}}
}

// memoryStatus is the memory part of the live status line: "mem 612M
// used, 300M free, 1 frozen, 2 waiting, pressure 12%"; "" without a
// governor.
func memoryStatus(m *buildrun.MemoryStats) string {
	if m == nil {
		return ""
	}
	s := fmt.Sprintf(", mem %s used, %s free", mib(m.Used), mib(m.Sample.Available))
	if m.Frozen > 0 {
		s += fmt.Sprintf(", %d frozen", m.Frozen)
	}
	if m.Waiting > 0 {
		s += fmt.Sprintf(", %d waiting", m.Waiting)
	}
	if m.Some >= 1 {
		s += fmt.Sprintf(", pressure %.0f%%", m.Some)
	}
	return s
}

// printMemory prints the summary's memory line: what bounded the run,
// and the OOM kills, freezes, thaws and OOM retries. Nothing without a governor.
func printMemory(w io.Writer, m *buildrun.MemoryStats) {
	if m == nil {
		return
	}
	var parts []string
	if m.Budget > 0 {
		parts = append(parts, "budget (--mem) "+mib(m.Budget))
	}
	if m.Sample.Limit > 0 {
		parts = append(parts, fmt.Sprintf("limit %s (%s)", mib(m.Sample.Limit), m.Sample.LimitFile))
	}
	parts = append(parts, mib(m.Sample.Available)+" available at the end",
		fmt.Sprintf("%d OOM kills, %d freezes, %d thaws, %d OOM retries", m.OOMKills, m.Freezes, m.Thaws, m.OOMRetries))
	fmt.Fprintf(w, "memory: %s\n", strings.Join(parts, ", "))
}

// mib formats a byte count in MiB: "612M".
func mib(n int64) string { return fmt.Sprintf("%dM", n>>20) }
