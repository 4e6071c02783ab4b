package clickhouse

import "testing"

// A free list keeps what was put back, no more than was in use at once,
// and a nil one keeps nothing.
func TestFreeList(t *testing.T) {
	var l freeList[[]byte]
	a, b := l.get(), l.get()
	*a = make([]byte, 0, 8)
	l.put(a)
	l.put(b)
	if got := l.get(); got != b {
		t.Errorf("get after put(a), put(b) = %p, want b %p", got, b)
	}
	if got := l.get(); got != a || cap(*got) != 8 {
		t.Errorf("second get = %p (cap %d), want a %p (cap 8)", got, cap(*got), a)
	}
	if len(l.free) != 0 {
		t.Errorf("%d kept with both in use, want 0", len(l.free))
	}
	var none *freeList[[]byte]
	none.put(a)
	if p := none.get(); p == nil || p == a {
		t.Errorf("nil list's get = %p, want a new buffer", p)
	}
}
