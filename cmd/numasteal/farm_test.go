package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/numasteal/numasteal/internal/distcctest"
	"github.com/numasteal/numasteal/launch/daemon"
)

// listening returns a host spec that answers and one that refuses.
func listening(t *testing.T) (up, down string) {
	t.Helper()
	up = distcctest.HangUp(t) + "/4" // answers a probe as distccd does
	return up, "127.0.0.1:" + strconv.Itoa(distcctest.FreePort(t)) + "/2"
}

func TestFarmStatus(t *testing.T) {
	up, down := listening(t)
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"farm", "status", "--farm", up + " " + down}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"HOST", " up ", " down ", "1 of 2 hosts up, 4 slots", "connection refused"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	code = dispatch(context.Background(), []string{"farm", "status", "--json", "--farm", up + " " + down}, &out, &errb)
	var rows []farmStatusJSON
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || code != exitOK || len(rows) != 2 {
		t.Fatalf("json: exit %d, %v: %s", code, err, out.String())
	}
	if !rows[0].Up || rows[0].Slots != 4 || rows[0].Score <= 0 || rows[1].Up || rows[1].Error == "" {
		t.Errorf("rows %+v", rows)
	}
	// No host answers: exit 1.
	if code := dispatch(context.Background(), []string{"farm", "status", "--farm", down}, &out, &errb); code != exitFail {
		t.Errorf("all down: exit %d, want %d", code, exitFail)
	}
	if code := dispatch(context.Background(), []string{"farm", "status", "--farm", "a:x"}, &out, &errb); code != exitUsage {
		t.Errorf("bad host: exit %d, want %d", code, exitUsage)
	}
}

// With every farm host down the run builds locally and says so.
func TestRunFarmHostsDown(t *testing.T) {
	_, down := listening(t)
	dir := t.TempDir()
	cmds := writeFile(t, dir, "cmds.txt", "echo one\necho two\n")
	code, out, errOut := runCmd(t, dir, "--progress", "none", "--farm", down, "--distcc", "/bin/true", cmds)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "is down") || !strings.Contains(out, "farm:") || !strings.Contains(out, "jobs 0 failures 1") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

func TestRunFarmBadFlags(t *testing.T) {
	dir := t.TempDir()
	cmds := writeFile(t, dir, "cmds.txt", "echo one\n")
	for _, args := range [][]string{
		{"--farm", "a:x", cmds},
		{"--farm", "a/2", "--distcc", filepath.Join(dir, "no-distcc"), cmds},
	} {
		if code, _, errOut := runCmd(t, dir, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, exitUsage, errOut)
		}
	}
}

func TestBenchSimFarm(t *testing.T) {
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"bench", "sim", "--farm-hosts", "1,4"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"SIMULATION", "numasteal-fifo", "distcc", "random"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, bad := range []string{"0", "1,x", ""} {
		if code := dispatch(context.Background(), []string{"bench", "sim", "--farm-hosts", bad}, &out, &errb); code != exitUsage {
			t.Errorf("--farm-hosts %q: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

// numasteal serve --farm probes its hosts, and numasteal status lists
// them, up or down; without --farm the daemon takes $DISTCC_HOSTS, and
// --farm none turns the farm off; a bad --farm is a usage error.
func TestServeFarm(t *testing.T) {
	up, down := listening(t)
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"serve", "--farm", "a:x"}, &out, &errb); code != exitUsage {
		t.Errorf("serve --farm a:x: exit %d, want %d: %s", code, exitUsage, errb.String())
	}
	for _, tc := range []struct {
		name, env string
		args      []string
		hosts     int
	}{
		{"flag", "", []string{"--farm", up + " " + down}, 2},
		{"env", up, nil, 1},
		{"none", up, []string{"--farm", "none"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sockDir := filepath.Join(t.TempDir(), "ns")
			if err := os.Mkdir(sockDir, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Setenv("NUMASTEAL_SOCKET", filepath.Join(sockDir, "sock"))
			t.Setenv("DISTCC_HOSTS", tc.env)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr lockedBuffer
			done := make(chan int, 1)
			go func() {
				done <- dispatch(ctx, append([]string{"serve", "--idle", "0"}, tc.args...), &stdout, &stderr)
			}()
			var st daemon.Status
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
				var err error
				if st, err = daemonStatus(os.Getenv("NUMASTEAL_SOCKET")); err == nil {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("no daemon: %v; stderr:\n%s", err, stderr.String())
				}
			}
			if len(st.Hosts) != tc.hosts {
				t.Errorf("status lists %d hosts, want %d: %+v", len(st.Hosts), tc.hosts, st.Hosts)
			}
			var text, errText bytes.Buffer
			if code := dispatch(ctx, []string{"status"}, &text, &errText); code != exitOK {
				t.Fatalf("status: exit %d: %s", code, errText.String())
			}
			if got := strings.Count(text.String(), "farm host "); got != tc.hosts {
				t.Errorf("status prints %d host lines, want %d:\n%s", got, tc.hosts, text.String())
			}
			if tc.hosts == 2 && (!strings.Contains(text.String(), " up: running 0/4") || !strings.Contains(text.String(), " down: running 0/2") ||
				!strings.Contains(stderr.String(), "is down")) {
				t.Errorf("status:\n%s\nserve's log:\n%s", text.String(), stderr.String())
			}
			cancel()
			if code := <-done; code != exitOK {
				t.Errorf("serve exit %d; stderr:\n%s", code, stderr.String())
			}
		})
	}
}
