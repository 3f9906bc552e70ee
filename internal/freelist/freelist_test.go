package freelist

import (
	"sync"
	"testing"
)

func TestListConcurrent(t *testing.T) {
	var l List[int]
	if _, ok := l.Pop(); ok {
		t.Fatal("Pop on an empty list")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				l.Push(g*1000 + i)
				if i%2 == 0 {
					l.Pop()
				}
			}
		}()
	}
	wg.Wait()
	n := 0
	l.Drain(func(int) { n++ })
	if n != 8*500 {
		t.Errorf("drained %d, want %d", n, 8*500)
	}
	if _, ok := l.Pop(); ok {
		t.Error("Pop after Drain")
	}
}
