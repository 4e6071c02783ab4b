package hit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// sameAsDecode checks that DecodeLean takes data exactly when Decode
// does, with the same hits' times, offsets, sites, paths and referrers.
func sameAsDecode(t *testing.T, data []byte, lean *Lean) {
	t.Helper()
	want, werr := Decode(data, nil)
	gerr := DecodeLean(data, lean)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("Decode: %v, DecodeLean: %v", werr, gerr)
	}
	if gerr != nil {
		if !errors.Is(gerr, ErrCorrupt) {
			t.Fatalf("error not ErrCorrupt: %v", gerr)
		}
		return
	}
	if len(lean.Hits) != len(want) {
		t.Fatalf("%d hits, want %d", len(lean.Hits), len(want))
	}
	for i, w := range want {
		g := lean.Hits[i]
		if g.Unix != w.Time.Unix() || g.Offset != w.Offset || lean.Str(g.Site) != w.Site ||
			lean.Str(g.Path) != w.Path || lean.Str(g.Referer) != w.Referer {
			t.Fatalf("hit %d: got %d %d %q %q %q, want %+v", i, g.Unix, g.Offset,
				lean.Str(g.Site), lean.Str(g.Path), lean.Str(g.Referer), w)
		}
	}
}

// TestDecodeLean decodes what TestDictionary and TestDecodeV1 do, in one
// reused Lean: batches that repeat their strings, that have more of them
// than the dictionary holds, version 1, and empty ones.
func TestDecodeLean(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var lean Lean
	var e Encoder
	for _, distinct := range []int{1, 300, 3 * maxDict} {
		e.Reset()
		for i := range 2 * maxDict {
			e.Add(&Hit{Time: time.Unix(1431857103+int64(rng.IntN(100))-50, 0), Site: fmt.Sprint("site", rng.IntN(2)),
				Path: fmt.Sprintf("/p/%d", rng.IntN(distinct)), Method: "GET", Status: 200, Bytes: uint64(i),
				Referer: fmt.Sprintf("r%d", rng.IntN(distinct)), Class: Class(rng.IntN(int(numClasses))), Client: uint64(rng.IntN(3)),
				Offset: rng.Uint64()})
		}
		sameAsDecode(t, e.Bytes(), &lean)
		if len(lean.Hits) != 2*maxDict {
			t.Fatalf("distinct %d: %d hits", distinct, len(lean.Hits))
		}
	}
	e.Reset()
	sameAsDecode(t, e.Bytes(), &lean)
	if len(lean.Hits) != 0 || len(lean.Words) != 0 {
		t.Fatalf("empty batch: %+v", lean)
	}
	v1 := []byte("PWH1")
	for _, h := range []Hit{{Time: time.Unix(1431857103, 0), Site: "example.com", Path: "/pricing", Method: "GET", Status: 200, Referer: "-"}, {Site: "example.com", Path: "/\x00", Offset: 1 << 40}} {
		v1 = appendV1(v1, h)
	}
	sameAsDecode(t, v1, &lean)
	for _, bad := range []string{"", "PWH", "PWH4", "PWH3\x00\x00\x00\x00\x07", "PWH3\x00\x00\x00\x00\x20", "PWH3\x00\x00\x00\x00\x40\x01\x02", "PWH2\x00\x00\x00\x00\x03", "PWH2\x00\x00\xe8\x07\x00", "PWH1\xff\xff\xff", "PWH2\x00\x00\x00\x00\x02a\x03\x05"} {
		sameAsDecode(t, []byte(bad), &lean)
		if DecodeLean([]byte(bad), &lean) == nil {
			t.Fatalf("%q: no error", bad)
		}
	}
}

// appendV1 appends h as a version 1 batch holds it.
func appendV1(data []byte, h Hit) []byte {
	data = binary.AppendVarint(data, h.Time.Unix())
	data = binary.AppendUvarint(data, h.Offset)
	data = binary.AppendUvarint(data, uint64(h.Status))
	data = binary.AppendUvarint(data, h.Bytes)
	for _, s := range [...]string{h.Site, h.Path, h.Method, h.Referer, "curl/8"} {
		data = binary.AppendUvarint(data, uint64(len(s)))
		data = append(data, s...)
	}
	return data
}

// FuzzDecodeLean: on any input, DecodeLean agrees with Decode.
func FuzzDecodeLean(f *testing.F) {
	var e Encoder
	e.Add(&Hit{Time: time.Unix(5, 0), Path: "/a", Status: 200})
	f.Add(e.Bytes())
	e.Add(&Hit{Time: time.Unix(6, 0), Path: "/a", Referer: "/b", Status: 200})
	f.Add(e.Bytes())
	f.Add([]byte("PWH1\xff\xff\xff"))
	f.Add([]byte("PWH2\x00\x00\x00\x00\x03"))
	f.Add(appendV1([]byte("PWH1"), Hit{Site: "s", Path: "/p", Referer: "r"}))
	var lean Lean
	f.Fuzz(func(t *testing.T, data []byte) { sameAsDecode(t, data, &lean) })
}

// FuzzRoundTripLean encodes hits as FuzzRoundTrip does and decodes them
// lean.
func FuzzRoundTripLean(f *testing.F) {
	f.Add([]byte("example.com|/a|GET|-|curl|/b|GET|-|curl|/a"), uint64(5))
	var lean Lean
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		parts := strings.Split(string(data), "|")
		var e Encoder
		n := 0
		for i := 0; i+4 < len(parts) && i < 5000; i += 3 {
			e.Add(&Hit{Time: time.Unix(int64(seed)+int64(i)*int64(seed%7)-1000, 0).UTC(), Site: parts[i], Path: parts[i+1],
				Method: parts[i+2], Referer: parts[i+3], Class: Class(seed % uint64(numClasses)), Uncounted: seed&1 == 1,
				Client: seed * uint64(i), Status: uint16(seed % 1000),
				Bytes: seed >> 3, Offset: seed * uint64(i)})
			n++
		}
		sameAsDecode(t, e.Bytes(), &lean)
		if len(lean.Hits) != n {
			t.Fatalf("%d hits, want %d", len(lean.Hits), n)
		}
	})
}

// BenchmarkDecodeLean decodes a 5,000-hit message with real traffic's
// repetition, as BenchmarkEncode encodes it, with Decode and DecodeLean.
func BenchmarkDecodeLean(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var e Encoder
	for i := range 5000 {
		e.Add(&Hit{Time: time.Unix(1431857103+int64(i/10), 0), Site: "example.com",
			Path: fmt.Sprintf("/blog/2015/05/post-%d.html", rng.IntN(1000)), Method: "GET", Status: 200, Bytes: 12345,
			Referer: fmt.Sprintf("https://www.google.com/search?q=pagewatch+%d", rng.IntN(100)),
			Offset:  uint64(i * 200)})
	}
	data := e.Bytes()
	b.Run("Decode", func(b *testing.B) {
		dst := make([]Hit, 0, 5000)
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var err error
			if dst, err = Decode(data, dst[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*5000)/b.Elapsed().Seconds(), "hits/s")
	})
	b.Run("DecodeLean", func(b *testing.B) {
		var lean Lean
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := DecodeLean(data, &lean); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*5000)/b.Elapsed().Seconds(), "hits/s")
	})
}
