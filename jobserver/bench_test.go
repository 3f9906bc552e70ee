//go:build linux

package jobserver

import "testing"

// BenchmarkAcquireRelease measures one token round trip (the implicit slot
// is held, so every Acquire reads the pipe).
func BenchmarkAcquireRelease(b *testing.B) {
	s, err := NewServer(4)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := s.Client()
	imp, err := c.Acquire(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Release(imp)
	b.ReportAllocs()
	for b.Loop() {
		tok, err := c.Acquire(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Release(tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImplicit measures the implicit slot, which takes no syscall.
func BenchmarkImplicit(b *testing.B) {
	s, err := NewServer(1)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := s.Client()
	b.ReportAllocs()
	for b.Loop() {
		tok, err := c.Acquire(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Release(tok); err != nil {
			b.Fatal(err)
		}
	}
}
