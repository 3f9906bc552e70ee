// Package bench reproduces the experiments that motivated numasteal, against
// real baselines, in one process and alternating the contenders run by run
// (A B A B …) so that a shared, noisy machine affects them alike; every
// figure it reports is a median. The cmd/numasteal "bench" subcommands print
// its results as tables or JSON.
package bench
