package proc

import (
	"bytes"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

// ReadFrom keeps every byte, in order, in memory and across the spill.
func TestOutputReadFromWhole(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef\n"), 1000) // 17 000 bytes
	for _, limit := range []int{1 << 20, 1000} {
		o := newOutput(limit, t.TempDir(), nil, &copyBufs{})
		n, err := io.Copy(o, iotest.HalfReader(bytes.NewReader(data)))
		o.seal()
		if err != nil || n != int64(len(data)) {
			t.Fatalf("limit %d: copied %d, %v; want %d", limit, n, err, len(data))
		}
		got, err := o.Bytes()
		if err != nil || !bytes.Equal(got, data) || o.Len() != int64(len(data)) {
			t.Errorf("limit %d: read back %d bytes (Len %d), %v; want the %d written", limit, len(got), o.Len(), err, len(data))
		}
		if spilled := o.SpillFile() != ""; spilled != (limit < len(data)) {
			t.Errorf("limit %d: spilled %v", limit, spilled)
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// ReadFrom returns the reader's error after keeping what came before it.
func TestOutputReadFromError(t *testing.T) {
	o := newOutput(1<<10, t.TempDir(), nil, nil)
	defer o.Close()
	r := io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(io.ErrUnexpectedEOF))
	if n, err := o.ReadFrom(r); n != 3 || err != io.ErrUnexpectedEOF {
		t.Fatalf("ReadFrom = %d, %v; want 3, %v", n, err, io.ErrUnexpectedEOF)
	}
	if got, _ := o.Bytes(); string(got) != "abc" {
		t.Fatalf("kept %q, want abc", got)
	}
}

// Copying a child's pipe into Outputs borrows the runner's buffers: many
// copies allocate far less than a copy buffer each (io.Copy's own, which
// ReadFrom replaces). A garbage collection may empty the pool, and under
// the race detector sync.Pool drops a quarter of what it is given, so the
// bound is half of what one buffer per copy would be.
func TestOutputReadFromBorrowsBuffers(t *testing.T) {
	const copies = 200
	bufs := &copyBufs{}
	outs := make([]*Output, copies)
	for i := range outs {
		outs[i] = newOutput(1<<10, t.TempDir(), nil, bufs)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, o := range outs {
		io.Copy(o, iotest.OneByteReader(bytes.NewReader([]byte("x\n"))))
	}
	runtime.ReadMemStats(&after)
	for _, o := range outs {
		if got, _ := o.Bytes(); string(got) != "x\n" {
			t.Fatalf("kept %q, want x\\n", got)
		}
		o.Close()
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > copies*copyBufSize/2 {
		t.Errorf("%d copies allocated %d bytes, want well under a %d-byte buffer each", copies, alloc, copyBufSize)
	}
}
