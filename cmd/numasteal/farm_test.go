package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// listening returns a host spec that answers and one that refuses.
func listening(t *testing.T) (up, down string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() { // answers a probe as distccd does: reads it and hangs up
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 64))
			c.Close()
		}
	}()
	d, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	port := func(l net.Listener) string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }
	return "127.0.0.1:" + port(l) + "/4", "127.0.0.1:" + port(d) + "/2"
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
