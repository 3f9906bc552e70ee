package bench

// ScaleRunOptions configures RunScaleRuns: numasteal run of N `true`
// commands for each N, alternated (10k 100k 10k 100k ...).
type ScaleRunOptions struct {
	// Numasteal is the numasteal binary measured.
	Numasteal string
	// Ns are the command counts.
	Ns []int
	// Reps is how many times each count runs; 0 means 3.
	Reps int
	// Jobs are the -j values each count runs at, DefaultJobs for numasteal
	// run's default (no -j); empty means DefaultJobs alone. The runs
	// alternate over them as over the counts.
	Jobs []int
	// Dir holds the command files.
	Dir string
	// Progress, when not nil, is called before each run.
	Progress func(string)
}

// DefaultJobs in ScaleRunOptions.Jobs and ScaleRunRow.Jobs stands for
// numasteal run's default -j (one slot per usable CPU): no -j is passed.
const DefaultJobs = -1

// ScaleRunRow is one command count at one -j: medians over the repetitions of the
// wall time per command and of numasteal's own CPU time per command (its
// utime+stime, read from /proc before it is reaped, so without the
// commands', which are its children's: ChildCPU).
type ScaleRunRow struct {
	// Jobs is the -j of the row's runs, DefaultJobs for none.
	Jobs          int     `json:"jobs"`
	N             int     `json:"n"`
	WallUSPerTask float64 `json:"wall_us_per_task"`
	OwnCPUUS      float64 `json:"own_cpu_us_per_task"`
	ChildCPUUS    float64 `json:"child_cpu_us_per_task"`
	PeakRSSKiB    int64   `json:"peak_rss_kib"`
}
