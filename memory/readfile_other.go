//go:build !unix

package memory

import "os"

// readFile is os.ReadFile.
func readFile(name string) ([]byte, error) { return os.ReadFile(name) }
