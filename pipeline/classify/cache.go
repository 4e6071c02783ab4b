package classify

import (
	"bytes"

	"github.com/pagewatch/pagewatch/domain/hit"
)

// Cache remembers the class of the user agents a Classifier has seen. A
// site's lines come from a few hundred user agents, so nearly every line
// costs a map lookup, which does not allocate, instead of a search of the
// crawler list. It is not safe for concurrent use: each tailer (each
// goroutine) has its own, which needs no lock.
type Cache struct {
	c       *Classifier
	classes map[string]hit.Class
	max     int
	// last is the user agent asked about last, and its class: a client
	// sends its requests in runs, and comparing bytes costs less than
	// hashing them for the map.
	last      []byte
	lastClass hit.Class
}

// Bounds of a Cache. User agents are the client's to choose: a client
// sending a new one per request would otherwise grow the map without
// end. Past maxEntries the map is emptied and fills again with the user
// agents in use, which costs a round of misses, far less than tracking
// recency on every hit. Longer user agents are classified each time: no
// browser sends one, and they would make the bound one of memory too
// (4096 entries of 512 bytes at most: 2 MiB).
const (
	DefaultEntries = 4096
	maxKeyBytes    = 512
)

// NewCache makes a cache of at most entries user agents (DefaultEntries
// when entries <= 0).
func (c *Classifier) NewCache(entries int) *Cache {
	if entries <= 0 {
		entries = DefaultEntries
	}
	return &Cache{c: c, classes: make(map[string]hit.Class, min(entries, 256)), max: entries}
}

// Class is Classifier.Class, remembered.
func (k *Cache) Class(ua []byte) hit.Class {
	if k.last != nil && bytes.Equal(ua, k.last) {
		return k.lastClass
	}
	cl, ok := k.classes[string(ua)]
	if !ok {
		cl = k.classify(ua)
	}
	if len(ua) <= maxKeyBytes {
		k.last, k.lastClass = append(k.last[:0], ua...), cl
	}
	return cl
}

func (k *Cache) classify(ua []byte) hit.Class {
	cl := k.c.Class(ua)
	if len(ua) > maxKeyBytes {
		return cl
	}
	if len(k.classes) >= k.max {
		clear(k.classes)
	}
	k.classes[string(ua)] = cl
	return cl
}

// Len is the number of user agents remembered.
func (k *Cache) Len() int { return len(k.classes) }
