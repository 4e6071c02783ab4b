package clickhouse

import (
	"sync"

	"github.com/pierrec/lz4/v4"
)

// buffers are what a Client's inserts reuse from one insert to the next:
// its rows and counts, some MB each at 100,000 hits, and the buffers and
// LZ4 compressor its body is encoded and compressed with. They are the
// Client's, so that Clients (a daemon's, each test's) share none and a
// closed Client's go with it.
type buffers struct {
	rows    freeList[[]row]
	minutes freeList[[]minuteCount]
	clients freeList[[]clientCount]
	// chunks and frames are the buffers a body is encoded and compressed
	// in, one of each per insert in flight.
	chunks, frames freeList[[]byte]
	// compressors each hold a 64 KiB hash table.
	compressors freeList[lz4.Compressor]
}

// freeList keeps buffers for reuse. Unlike a sync.Pool it is not emptied
// by garbage collections, which come every few inserts: a buffer of
// several MB dropped is allocated, cleared and faulted in again by the
// next insert. Every buffer put back was got from it first, so it keeps
// at most as many as were ever in use at once: as many as the loader's
// inserts in flight need, whatever ingest.load.inserts is set to. The
// zero value is empty; a nil list keeps nothing, for callers that have
// no buffers to reuse (tests).
type freeList[T any] struct {
	mu   sync.Mutex
	free []*T
}

func (l *freeList[T]) get() *T {
	if l == nil {
		return new(T)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.free)
	if n == 0 {
		return new(T)
	}
	p := l.free[n-1]
	l.free[n-1] = nil
	l.free = l.free[:n-1]
	return p
}

func (l *freeList[T]) put(p *T) {
	if l == nil || p == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free = append(l.free, p)
}
