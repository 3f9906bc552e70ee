package balance_test

import (
	"fmt"

	"github.com/numasteal/numasteal/balance"
)

// Choosing a policy by name, as runtime.Config and the --policy flags do.
func ExampleByName() {
	for _, name := range balance.Names() {
		p, err := balance.ByName(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(p.Name())
	}
	_, err := balance.ByName("random")
	fmt.Println(err)
	// Output:
	// hierarchical
	// flat
	// local
	// balance: unknown policy "random" (known: hierarchical, flat, local)
}

// Hierarchical's defaults: Linux's intervals scaled to user space,
// migration_cost, and HotSLAW's steal amounts.
func ExampleNewHierarchical() {
	c := balance.NewHierarchical(balance.HierarchicalConfig{}).Config()
	fmt.Println("1 ms of interval ->", c.IntervalUnit)
	fmt.Println("migration cost:", c.MigrationCost)
	fmt.Printf("steal: %d inside the LLC, x%d per level beyond, at most %d\n", c.StealLocal, c.StealGrowth, c.StealCap)
	// Output:
	// 1 ms of interval -> 250ns
	// migration cost: 500µs
	// steal: 1 inside the LLC, x2 per level beyond, at most 64
}
