package jobserver

import (
	"errors"
	"testing"
)

func TestParseMakeflags(t *testing.T) {
	tests := []struct {
		in   string
		want Auth
	}{
		{"", Auth{R: -1, W: -1}},
		{" -j3 --jobserver-auth=3,4", Auth{Kind: KindPipe, R: 3, W: 4, Jobs: 3, Option: "--jobserver-auth=3,4"}},
		{"ks -j8 --jobserver-fds=5,6 --no-print-directory", Auth{Kind: KindPipe, R: 5, W: 6, Jobs: 8, Option: "--jobserver-fds=5,6"}},
		{" -j4 --jobserver-auth=fifo:/tmp/GMfifo123", Auth{Kind: KindFIFO, R: -1, W: -1, Path: "/tmp/GMfifo123", Jobs: 4, Option: "--jobserver-auth=fifo:/tmp/GMfifo123"}},
		// make 4.4 may list several; the last one wins.
		{"-j4 --jobserver-auth=3,4 --jobserver-auth=fifo:/f", Auth{Kind: KindFIFO, R: -1, W: -1, Path: "/f", Jobs: 4, Option: "--jobserver-auth=fifo:/f"}},
		{"-j", Auth{R: -1, W: -1, Jobs: -1}},
		{"-j2", Auth{R: -1, W: -1, Jobs: 2}},
		{"--jobs=5", Auth{R: -1, W: -1, Jobs: 5}},
		// Variable definitions after -- are not options.
		{"k -- X=--jobserver-auth=3,4", Auth{R: -1, W: -1}},
		{" -j2 -- CFLAGS=-O2\\ -g", Auth{R: -1, W: -1, Jobs: 2}},
		// An escaped blank is part of the word.
		{"-j2 --jobserver-auth=fifo:/tmp/a\\ b", Auth{Kind: KindFIFO, R: -1, W: -1, Path: "/tmp/a\\ b", Jobs: 2, Option: "--jobserver-auth=fifo:/tmp/a\\ b"}},
	}
	for _, tt := range tests {
		got, err := ParseMakeflags(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseMakeflags(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseMakeflagsErrors(t *testing.T) {
	for _, in := range []string{
		"--jobserver-auth=3",
		"--jobserver-auth=a,b",
		"--jobserver-auth=-1,4",
		"--jobserver-auth=fifo:",
		"--jobserver-fds=3;4",
		"-jx",
	} {
		_, err := ParseMakeflags(in)
		var ue *UnavailableError
		if !errors.As(err, &ue) {
			t.Errorf("ParseMakeflags(%q) error = %v, want *UnavailableError", in, err)
		}
	}
}

func TestMergeMakeflags(t *testing.T) {
	tests := []struct {
		old  string
		jobs int
		auth string
		want string
	}{
		{"", 3, "3,4", " -j3 --jobserver-auth=3,4"},
		{" -j8 --jobserver-auth=5,6", 3, "3,4", " -j3 --jobserver-auth=3,4"},
		{"ks -j8 --jobserver-fds=5,6 --no-print-directory -- CC=gcc X=a\\ -j9", 2, "fifo:/f",
			"ks -j2 --jobserver-auth=fifo:/f --no-print-directory -- CC=gcc X=a\\ -j9"},
		{"-j --jobs=4 -k", 0, "4,5", " --jobserver-auth=4,5 -k"},
		{"CC=gcc", 2, "3,4", " -j2 --jobserver-auth=3,4 CC=gcc"},
	}
	for _, tt := range tests {
		got := MergeMakeflags(tt.old, tt.jobs, tt.auth)
		if got != tt.want {
			t.Errorf("MergeMakeflags(%q, %d, %q) = %q, want %q", tt.old, tt.jobs, tt.auth, got, tt.want)
		}
		if a, err := ParseMakeflags(got); err != nil || a.Option != "--jobserver-auth="+tt.auth {
			t.Errorf("ParseMakeflags(%q) = %+v, %v", got, a, err)
		}
	}
}

func FuzzParseMakeflags(f *testing.F) {
	for _, s := range []string{" -j3 --jobserver-auth=3,4", "k -- X=1", "--jobserver-auth=fifo:/x", "-j"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseMakeflags(s)
		if err != nil {
			return
		}
		if a.Kind == KindPipe && (a.R < 0 || a.W < 0) {
			t.Errorf("ParseMakeflags(%q) = %+v: negative descriptor", s, a)
		}
		MergeMakeflags(s, 3, "3,4")
	})
}
