module github.com/numasteal/numasteal

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/spf13/pflag v1.1.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	golang.org/x/sync v0.25.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require go.uber.org/multierr v1.10.0 // indirect
