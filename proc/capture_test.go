package proc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/numasteal/numasteal/runtime"
)

// Many tasks at once through reused capture files: each result holds
// exactly what its own command printed, on the right stream, whether it
// printed nothing, a line, or more than the in-memory limit (a spill),
// and whether it failed or a background job outlived it.
func TestCaptureStress(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{Slots: 4, OutputLimit: 1 << 10})
	const n = 120
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var script, out, errOut string
			switch i % 5 {
			case 0: // nothing
				script = "true"
			case 1:
				script = fmt.Sprintf("echo out%d; echo err%d >&2", i, i)
				out, errOut = fmt.Sprintf("out%d\n", i), fmt.Sprintf("err%d\n", i)
			case 2: // past the limit: spilled
				script = fmt.Sprintf("i=0; while [ $i -lt 200 ]; do echo line%d-$i; i=$((i+1)); done", i)
				var b strings.Builder
				for k := range 200 {
					fmt.Fprintf(&b, "line%d-%d\n", i, k)
				}
				out = b.String()
			case 3: // fails
				script = fmt.Sprintf("echo bad%d >&2; exit 3", i)
				errOut = fmt.Sprintf("bad%d\n", i)
			case 4: // a background job outlives the command
				script = fmt.Sprintf("sleep 5 & echo bg%d", i)
				out = fmt.Sprintf("bg%d\n", i)
			}
			res := r.Run(context.Background(), Command{Args: sh(script)})
			defer res.Close()
			if i%5 == 3 {
				if res.ExitCode != 3 {
					errs <- fmt.Errorf("task %d: exit %d, want 3", i, res.ExitCode)
				}
			} else if !res.Success() {
				errs <- fmt.Errorf("task %d: %v %v", i, res.Outcome, res.Err)
			}
			for _, s := range []struct {
				name string
				o    *Output
				want string
			}{{"stdout", res.Stdout, out}, {"stderr", res.Stderr, errOut}} {
				got, err := s.o.Bytes()
				if err != nil {
					errs <- fmt.Errorf("task %d %s: %v", i, s.name, err)
				} else if string(got) != s.want {
					errs <- fmt.Errorf("task %d %s = %q, want %q", i, s.name, got, s.want)
				}
				if s.o.Len() != int64(len(s.want)) {
					errs <- fmt.Errorf("task %d %s: Len %d, want %d", i, s.name, s.o.Len(), len(s.want))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
