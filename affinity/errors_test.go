package affinity

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Op: "sched_setaffinity", Unit: "CPUs", Set: "7-8", Err: syscall.EINVAL},
			"affinity: sched_setaffinity to CPUs 7-8: invalid argument"},
		{&Error{Op: "sched_setaffinity", Pid: 42, Unit: "CPUs", Set: "0", Err: syscall.ESRCH},
			"affinity: sched_setaffinity of pid 42 to CPUs 0: no such process"},
		{&Error{Op: "sched_setaffinity", Unit: "CPUs", Err: ErrEmptySet},
			"affinity: sched_setaffinity to no CPUs: empty set"},
		{&Error{Op: "set_mempolicy bind", Unit: "nodes", Set: "1", Err: syscall.EINVAL},
			"affinity: set_mempolicy bind to nodes 1: invalid argument"},
		{&Error{Op: "getcpu", Err: syscall.ENOSYS},
			"affinity: getcpu: function not implemented"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.err, tt.err.Err) {
			t.Errorf("errors.Is(%q, its cause) = false", tt.err)
		}
	}
}

func TestErrUnsupportedWrapsStd(t *testing.T) {
	if !errors.Is(ErrUnsupported, errors.ErrUnsupported) {
		t.Fatal("ErrUnsupported does not wrap errors.ErrUnsupported")
	}
}

func TestModeString(t *testing.T) {
	tests := []struct {
		m    Mode
		want string
	}{
		{Default, "default"}, {Preferred, "preferred"}, {Bind, "bind"}, {Interleave, "interleave"},
		{Local, "local"}, {PreferredMany, "preferred-many"}, {WeightedInterleave, "weighted-interleave"},
		{Mode(9), "mode(9)"}, {Mode(-1), "mode(-1)"},
	}
	for _, tt := range tests {
		if got := tt.m.String(); got != tt.want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(tt.m), got, tt.want)
		}
	}
}

func ExampleError() {
	err := &Error{Op: "sched_setaffinity", Unit: "CPUs", Set: "7-8", Err: syscall.EINVAL}
	fmt.Println(err)
	fmt.Println(errors.Is(err, syscall.EINVAL))
	// Output:
	// affinity: sched_setaffinity to CPUs 7-8: invalid argument
	// true
}
