package buildgraph

import (
	"fmt"
	"strings"
)

// dumpGraph formats a graph's tasks one per line, for failure messages.
func dumpGraph(g *Graph) string {
	var b strings.Builder
	for _, t := range g.Tasks {
		fmt.Fprintf(&b, "\n\t%+v", *t)
	}
	fmt.Fprintf(&b, "\n\tpools %v %v", g.Pools, g.poolPos)
	return b.String()
}
