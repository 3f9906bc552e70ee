package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The history where it cannot be saved, at a working directory that takes
// no new file or under a home that takes no key: the build runs (exit 0,
// its commands done), and stderr holds one line, a warning that the
// history will not be saved; no history file is left. The places are real:
// as root (whom mode bits do not stop) the binary runs as nobody in a
// directory of root's; otherwise in a directory of mode 0555. A file in
// place of the state directory stops root too.
func TestRunHistoryUnwritable(t *testing.T) {
	bin := numastealBinary(t)
	uid, gid := os.Getuid(), os.Getgid()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		uid, gid = 65534, 65534 // nobody
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	base, err := os.MkdirTemp("", "numasteal-history-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(base, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(base)
	})
	mkdir := func(name string, mine bool) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if mine {
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	out := mkdir("out", true)        // where the build writes
	state := mkdir("state", true)    // a usable $XDG_STATE_HOME
	locked := mkdir("locked", false) // a working directory that takes no file
	if cred == nil {
		if err := os.Chmod(locked, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	free := mkdir("free", true) // a working directory that does
	notDir := filepath.Join(base, "not-a-dir")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := writeFile(t, base, "c.txt", "echo built > "+filepath.Join(out, "built")+"\n")

	for _, tc := range []struct {
		name, dir string
		env       []string
		why       string // in the warning
	}{
		{"working directory", locked, []string{"XDG_STATE_HOME=" + state}, "cannot create a file in .: permission denied"},
		{"state directory", free, []string{"XDG_STATE_HOME=" + notDir}, "no key for command hashes: "},
		{"home", free, []string{"HOME=" + notDir}, filepath.Join(notDir, ".local", "state", "numasteal")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f, err := os.CreateTemp(tc.dir, "probe"); err == nil && tc.dir == locked && cred == nil {
				f.Close()
				os.Remove(f.Name())
				t.Skip("the locked directory takes files here (a capability?)")
			}
			os.Remove(filepath.Join(out, "built"))
			cmd := exec.Command(bin, "run", "--progress", "none", cmds)
			cmd.Dir = tc.dir
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); k != "XDG_STATE_HOME" && k != "HOME" {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, tc.env...)
			if cred != nil {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if err != nil || !strings.Contains(stdout.String(), "1 tasks: 1 succeeded") {
				t.Errorf("%v, want exit 0 and the build done; stdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			if b, _ := os.ReadFile(filepath.Join(out, "built")); string(b) != "built\n" {
				t.Errorf("the command did not run: built = %q", b)
			}
			msg := stderr.String()
			const head = "numasteal run: warning: the history .numasteal_history will not be saved ("
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, head) || !strings.Contains(msg, tc.why) || !strings.HasSuffix(msg, "); the build runs\n") {
				t.Errorf("stderr:\n%s\nwant one line %q…%q…", msg, head, tc.why)
			}
			if _, err := os.Lstat(filepath.Join(tc.dir, ".numasteal_history")); err == nil {
				t.Errorf("a history was saved in %s", tc.dir)
			}
		})
	}
}
