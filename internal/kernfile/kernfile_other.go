//go:build !unix

// Package kernfile reads the small files of the kernel's file systems
// (procfs, sysfs, cgroupfs); elsewhere than on Unix it is os.ReadFile.
package kernfile

import "os"

// Read reads the file name; buf is not used.
func Read(name string, buf []byte) ([]byte, error) { return os.ReadFile(name) }
