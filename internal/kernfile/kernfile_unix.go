//go:build unix

// Package kernfile reads and writes the small files of the kernel's file
// systems (procfs, sysfs, cgroupfs) with plain system calls: open, read
// until end of file (or one write), close. os.ReadFile also offers each
// such file to Go's poller (kernfs files can be polled, so it takes an
// fcntl and an epoll_ctl to add and one to remove) and fstats it, which
// doubles the cost of a read that runs once per task or per launch.
package kernfile

import (
	"errors"
	"io/fs"
	"syscall"
)

// Read reads the file name into buf, which it grows when the text does
// not fit (a nil buf gets 512 bytes), and returns the text.
func Read(name string, buf []byte) ([]byte, error) {
	fd, err := open(name, syscall.O_RDONLY)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	if cap(buf) == 0 {
		buf = make([]byte, 0, 512)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// Write writes data to the existing file name in one write, as a kernel
// file wants a value: a short write is an error.
func Write(name string, data []byte) error {
	fd, err := open(name, syscall.O_WRONLY)
	if err != nil {
		return &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.Write(fd, data)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err == nil && n != len(data) {
			err = syscall.EIO
		}
		if err != nil {
			return &fs.PathError{Op: "write", Path: name, Err: err}
		}
		return nil
	}
}

func open(name string, mode int) (int, error) {
	for {
		fd, err := syscall.Open(name, mode|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}
