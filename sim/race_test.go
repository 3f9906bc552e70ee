//go:build race

package sim

// raceDetector reports whether the tests run under the race detector
// (go test -race), which slows the simulator about tenfold.
const raceDetector = true
