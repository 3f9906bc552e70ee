package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/domains"
)

// runTopo implements "numasteal topo": discover the machine (or the dump
// under --root), build its scheduling domains, and print them for people
// (a tree like lstopo-no-graphics, then the node table of numactl
// --hardware, then with --domains the domain levels) or, with --json, as
// the JSON document of topo_json.go.
func runTopo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal topo", stderr)
	root := fs.String("root", "", "read `DIR`/sys and DIR/proc (a sysfs dump) instead of the live machine")
	showDomains := fs.Bool("domains", false, "also print the scheduling-domain levels and their parameters")
	asJSON := fs.Bool("json", false, "print one JSON document instead of text")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: numasteal topo [--root DIR] [--domains] [--json]")
		fmt.Fprintln(fs.Output())
		fmt.Fprintln(fs.Output(), "Print the machine as numasteal sees it: usable CPUs, packages, cores,")
		fmt.Fprintln(fs.Output(), "caches, NUMA nodes with memory and distances, scheduling domains.")
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "numasteal topo: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "numasteal topo: %v\n", err)
		return exitFail
	}

	// A dump given with --root that cannot be read is bad input (exit 2);
	// the live machine's sysfs failing is the run failing (exit 1).
	var opts []topology.Option
	where, failCode := "the live machine", exitFail
	if *root != "" {
		opts = append(opts, topology.WithRoot(*root))
		where, failCode = *root, exitUsage
	}
	t, err := topology.Discover(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal topo: reading %s: %v\n", where, err)
		return failCode
	}
	d, err := domains.Build(t)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal topo: %s: %v\n", where, err)
		return failCode
	}

	if *asJSON {
		doc, err := json.MarshalIndent(newTopoReport(t, d), "", "  ")
		if err == nil {
			_, err = stdout.Write(append(inlineScalarLists(doc), '\n'))
		}
		if err != nil {
			fmt.Fprintf(stderr, "numasteal topo: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	if err := writeTopoText(stdout, t, d, *showDomains); err != nil {
		fmt.Fprintf(stderr, "numasteal topo: %v\n", err)
		return exitFail
	}
	return exitOK
}
