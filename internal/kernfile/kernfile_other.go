//go:build !unix

// Package kernfile reads and writes the small files of the kernel's file
// systems (procfs, sysfs, cgroupfs); elsewhere than on Unix it is
// os.ReadFile and a write of an existing file.
package kernfile

import "os"

// Read reads the file name; buf is not used.
func Read(name string, buf []byte) ([]byte, error) { return os.ReadFile(name) }

// Write writes data to the existing file name.
func Write(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
