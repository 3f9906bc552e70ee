package topology_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/topology"
)

// A named pipe, a device or a huge file in a dump is refused at once with
// a *FileError naming it: a FIFO used to block Discover (and numasteal
// topo --root, which no signal stopped) forever.
func TestDiscoverSpecialFiles(t *testing.T) {
	const online = "sys/devices/system/cpu/online"
	tests := []struct {
		name   string
		online string // the file replaced
		make   func(path string) error
		is     error
	}{
		{"fifo", online, func(p string) error { return syscall.Mkfifo(p, 0o644) }, topology.ErrNotRegular},
		{"fifo for a directory", "sys/devices/system/node", func(p string) error { return syscall.Mkfifo(p, 0o644) }, topology.ErrNotRegular},
		{"device", online, func(p string) error { return os.Symlink("/dev/zero", p) }, topology.ErrNotRegular},
		{"huge", online, func(p string) error {
			if err := os.WriteFile(p, []byte("0-3\n"), 0o644); err != nil {
				return err
			}
			return os.Truncate(p, 1<<30)
		}, topology.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			online := tt.online
			root := tinyTree(t, treeEdits{online: rm})
			p := filepath.Join(root, filepath.FromSlash(online))
			if err := tt.make(p); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := topology.Discover(topology.WithRoot(root))
				done <- err
			}()
			select {
			case err := <-done:
				var fe *topology.FileError
				if !errors.As(err, &fe) || fe.Path != online || !errors.Is(err, tt.is) {
					t.Errorf("Discover = %v; want a *FileError for %s wrapping %v", err, online, tt.is)
				}
			case <-time.After(10 * time.Second):
				// Unblock the reader so the goroutine ends, then fail.
				if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatal("Discover still blocked after 10s")
			}
		})
	}
}
