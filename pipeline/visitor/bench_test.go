package visitor_test

import (
	"crypto/rand"
	"encoding/binary"
	"testing"
	"time"

	"github.com/dchest/siphash"
	"golang.org/x/crypto/blake2b"
)

// BenchmarkKey is the cost of a client key once the day's salt is held,
// which is every line but a day's first: a typical IPv6 address and
// browser user agent.
func BenchmarkKey(b *testing.B) {
	bb := setup(b)
	k := bb.tailer(0).salts.Keyer()
	at := bb.clock.now()
	addr, ua := []byte("2001:db8:85a3::8a2e:370:7334"), []byte(chrome)
	key(b, k, at, string(addr), chrome) // fetches the salt
	ctx := b.Context()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := k.Key(ctx, at, addr, ua); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/key")
}

var sink uint64

// BenchmarkHashChoice is why the key is SipHash-2-4: keyed BLAKE2b, the
// other well-kept keyed PRF at hand, costs more than ten times as much on
// this input (its key fills a 128-byte block of its own, and the input
// spans two more), and SipHash costs about twice a map lookup of the same
// bytes, so a cache of keys would save little and hold addresses and user
// agents longer.
func BenchmarkHashChoice(b *testing.B) {
	salt := make([]byte, 32)
	_, _ = rand.Read(salt)
	addr, ua := []byte("2001:db8:85a3::8a2e:370:7334"), []byte(chrome)
	input := binary.AppendUvarint(nil, uint64(len(addr)))
	input = append(append(input, addr...), ua...)
	b.Run("siphash", func(b *testing.B) {
		k0, k1 := binary.LittleEndian.Uint64(salt), binary.LittleEndian.Uint64(salt[8:])
		for b.Loop() {
			sink = siphash.Hash(k0, k1, input)
		}
	})
	b.Run("blake2b", func(b *testing.B) {
		h, err := blake2b.New(8, salt)
		if err != nil {
			b.Fatal(err)
		}
		var out [8]byte
		for b.Loop() {
			h.Reset()
			h.Write(input)
			sink = binary.LittleEndian.Uint64(h.Sum(out[:0]))
		}
	})
	b.Run("map lookup", func(b *testing.B) {
		m := map[string]uint64{string(input): 1}
		for i := range 1000 {
			m[string(binary.AppendUvarint(input[:len(input):len(input)], uint64(i)))] = uint64(i)
		}
		for b.Loop() {
			sink = m[string(input)]
		}
	})
}
