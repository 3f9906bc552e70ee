// Package farm is the outermost scheduling domain: a compile farm of
// distcc hosts above the local machine. It treats a remote host the way
// package balance treats a remote NUMA node: farther and costlier, used
// when the near CPUs are busy.
//
// It does not speak a network protocol of its own; the jobs go through
// distcc (Debian's distcc/distccd). The package holds the three pieces the
// executor (buildrun) and the simulator (bench) share:
//
//   - hosts: a host list in distcc's DISTCC_HOSTS syntax (host[:port]/N),
//     from a flag, a file or the environment (ParseHosts, LoadHosts);
//   - compiles: which commands may go remote, a compiler invocation that
//     turns one source into one object with -c (ParseCompile), and how to
//     split it into local preprocessing and a remote compile; the code is
//     package farm/compile, which the launcher links without this
//     package's networking;
//   - placement: a Farm keeps per-host state (slots, jobs, failures,
//     measured speed, exponential back-off) and picks the host with the
//     best score, modelled on icecream's scheduler (Acquire, Release,
//     Stats).
//
// Time is passed in by the caller, so the simulator drives the same Farm
// on virtual time.
package farm
