package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionAndHelp: the launcher's own options print and exit 0, and
// are not taken for a program named --version; under another name
// (a masquerade link) they are the program's.
func TestVersionAndHelp(t *testing.T) {
	e := newEnv(t, "")
	for _, tc := range []struct{ arg, want string }{
		{"--version", "numasteal-launch "},
		{"-h", "usage: numasteal-launch COMMAND [ARGS...]\n"},
		{"--help", "usage: numasteal-launch COMMAND [ARGS...]\n"},
	} {
		out, err := e.cmd("", e.launcher(), tc.arg).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("numasteal-launch %s: %v\n%s", tc.arg, err, out)
		}
	}
	masq := t.TempDir()
	os.Symlink(e.launcher(), filepath.Join(masq, "echo"))
	c := e.cmd("", filepath.Join(masq, "echo"), "--version")
	c.Env = append(c.Env, "NUMASTEAL_LAUNCH=off")
	if out, err := c.CombinedOutput(); err != nil || strings.Contains(string(out), "numasteal") {
		t.Errorf("echo --version through a masquerade link: %v %q", err, out)
	}
}

// readmeInstall returns the commands of the README's Install section: the
// one for a user and the one for the machine.
func readmeInstall(t *testing.T) (user, machine string) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## Install\n")
	if i < 0 {
		t.Fatal("README.md has no Install section")
	}
	s = s[i+1:]
	if j := strings.Index(s[1:], "\n## "); j >= 0 {
		s = s[:j+1]
	}
	var cmds []string
	for _, block := range strings.Split(s, "```sh\n")[1:] {
		cmds = append(cmds, strings.TrimSpace(block[:strings.Index(block, "```")]))
	}
	if len(cmds) != 2 {
		t.Fatalf("the Install section has %d commands, want 2 (a user's, the machine's):\n%s", len(cmds), s)
	}
	return cmds[0], cmds[1]
}

// TestReadmeInstall runs the README's two install commands, into
// directories of the test's: the user's (GOBIN), and the machine's with
// the test's directory for /usr/local/bin and no sudo. The launcher
// installed either way starts the daemon installed beside it, with
// nothing but PATH to find them; the machine's binaries run as another
// user (when the test can switch).
func TestReadmeInstall(t *testing.T) {
	user, machine := readmeInstall(t)
	root, _ := filepath.Abs("../..")
	tmp, err := os.MkdirTemp("", "nsi-") // open to another user, unlike t.TempDir's
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o755)
	userBin, prefix := filepath.Join(tmp, "gobin"), filepath.Join(tmp, "usr-local-bin")
	os.Mkdir(prefix, 0o755)
	machine = strings.ReplaceAll(machine, "/tmp/numasteal-bin", filepath.Join(tmp, "build"))
	machine = strings.ReplaceAll(machine, "sudo ", "")
	machine = strings.ReplaceAll(machine, "/usr/local/bin/", prefix+"/")
	for _, tc := range []struct{ cmd, bin string }{{user, userBin}, {machine, prefix}} {
		sh := exec.Command("sh", "-ec", tc.cmd)
		sh.Dir = root
		sh.Env = append(os.Environ(), "GOBIN="+userBin, "GOFLAGS=-buildvcs=false")
		run(t, sh)
		for _, name := range []string{"numasteal", "numasteal-launch"} {
			fi, err := os.Stat(filepath.Join(tc.bin, name))
			if err != nil || fi.Mode().Perm()&0o005 != 0o005 {
				t.Fatalf("%s: %s/%s: %v %v, want a program others can run", tc.cmd, tc.bin, name, err, fi)
			}
		}
		// Found through PATH, it finds its daemon beside itself.
		e := newEnv(t, "")
		c := e.cmd("", "sh", "-c", "exec numasteal-launch true")
		c.Env = append(c.Env, "NUMASTEAL_BIN=", "PATH="+tc.bin+":/usr/bin:/bin")
		run(t, c)
		if got := e.done(); got != "1" {
			t.Errorf("%s: the daemon ran %s jobs, want 1", tc.cmd, got)
		}
	}
	if os.Getuid() == 0 {
		out, err := asUser(exec.Command(filepath.Join(prefix, "numasteal-launch"), "--version")).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "numasteal-launch ") {
			t.Errorf("the machine's launcher as uid 65534: %v %q", err, out)
		}
	}
}
