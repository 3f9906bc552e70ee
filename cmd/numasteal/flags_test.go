package main

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
)

// Every command rejects a bad flag with one line saying why and one hint
// to -h, and exit status 2; single-dash long forms are bad flags now.
func TestBadFlagEveryCommand(t *testing.T) {
	for _, cmd := range [][]string{
		{"topo"}, {"run"}, {"farm", "status"}, {"version"},
		{"bench", "forkjoin"}, {"bench", "counters"}, {"bench", "diffprofile"},
		{"bench", "kernbench"}, {"bench", "scale"}, {"bench", "sdet"}, {"bench", "sim"},
	} {
		for _, bad := range []string{"--no-such-flag", "-json"} {
			args := append(append([]string(nil), cmd...), bad)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, out, errOut := run(t, args...)
				if code != exitUsage {
					t.Errorf("exit %d, want %d", code, exitUsage)
				}
				name := "numasteal " + strings.Join(cmd, " ")
				lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
				if len(lines) != 2 || !strings.HasPrefix(lines[0], name+": ") ||
					lines[1] != fmt.Sprintf("Run '%s -h' for usage.", name) || out != "" {
					t.Errorf("stdout %q, stderr %q: want one line and the hint", out, errOut)
				}
			})
		}
	}
}

func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/numasteal/numasteal", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionLine(bi), "numasteal v0.3.0 (rev 0123abcd, modified, go1.26.8)"; got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
	bi.Main.Version, bi.Settings = "", nil
	if got, want := versionLine(bi), "numasteal (devel) (rev unknown, go1.26.8)"; got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
	code, out, _ := run(t, "--version")
	if code != exitOK || !strings.HasPrefix(out, "numasteal ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}
