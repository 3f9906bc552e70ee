package bench

import (
	"bytes"
	"fmt"

	"github.com/google/pprof/profile"
)

// ProfileFlat is a CPU profile reduced to samples per leaf function (flat
// samples; the innermost inlined frame counts).
type ProfileFlat struct {
	Samples map[string]int64
	Total   int64
}

// ParsePprof reads a pprof profile (gzipped or not) with
// github.com/google/pprof/profile; name is the file, for errors. It counts
// the first sample value (samples, for a CPU profile) by the function of the
// leaf location's first line: the innermost of the frames inlined there. A
// sample without one counts as "[unknown]".
func ParsePprof(name string, data []byte) (*ProfileFlat, error) {
	prof, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("bench: profile %s: %w", name, err)
	}
	p := &ProfileFlat{Samples: map[string]int64{}}
	for _, s := range prof.Sample {
		if len(s.Value) == 0 {
			continue
		}
		fn := "[unknown]"
		if len(s.Location) > 0 {
			if l := s.Location[0]; len(l.Line) > 0 && l.Line[0].Function != nil {
				fn = l.Line[0].Function.Name
			}
		}
		p.Samples[fn] += s.Value[0]
		p.Total += s.Value[0]
	}
	return p, nil
}
