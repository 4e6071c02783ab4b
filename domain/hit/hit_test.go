package hit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestRoundTrip(t *testing.T) {
	in := []Hit{
		{Time: time.Unix(1431857103, 0).UTC(), Site: "example.com", Path: "/pricing", Method: "GET", Status: 200, Bytes: 1234, Referer: "-", Class: ClassBot, Client: 42, Offset: 0},
		{Time: time.Unix(0, 0).UTC(), Site: "", Path: "/\x00\xff\r\n", Method: "HEAD", Status: 404, Offset: 1 << 40},
	}
	var e Encoder
	for i := range in {
		e.Add(&in[i])
	}
	out, err := Decode(e.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
	e.Reset()
	if out, err := Decode(e.Bytes(), nil); err != nil || len(out) != 0 {
		t.Fatalf("empty batch: %v %v", out, err)
	}
}

// TestDictionary round-trips batches whose strings repeat (references),
// whose strings alias a buffer overwritten between hits, as pageview.Fill's
// do, and with more distinct strings than the dictionary holds.
func TestDictionary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	line := make([]byte, 64)
	var e Encoder
	for _, distinct := range []int{3, 300, 3 * maxDict} {
		e.Reset()
		var want []Hit
		for i := range 2 * maxDict {
			// The referrer lives in line, which the next hit overwrites.
			ref := line[:copy(line, fmt.Sprintf("r%d", rng.IntN(distinct)))]
			h := Hit{Time: time.Unix(1431857103+int64(rng.IntN(100))-50, 0).UTC(), Site: "example.com",
				Path: fmt.Sprintf("/p/%d", rng.IntN(distinct)), Method: "GET", Status: 200, Bytes: uint64(i),
				Referer: unsafe.String(unsafe.SliceData(ref), len(ref)),
				Class:   Class(i % int(numClasses)), Uncounted: i%3 == 0, Client: uint64(rng.IntN(distinct)) * 0x9E3779B97F4A7C15,
				Offset: uint64(i * 100)}
			if i%5 == 0 {
				h.Offset = uint64(rng.Uint64()) // backwards too
			}
			e.Add(&h)
			h.Referer = string(ref)
			want = append(want, h)
		}
		got, err := Decode(e.Bytes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range want {
				if i >= len(got) || got[i] != want[i] {
					t.Fatalf("distinct %d: hit %d:\n got %+v\nwant %+v", distinct, i, got[i], want[i])
				}
			}
			t.Fatalf("distinct %d: %d hits, want %d", distinct, len(got), len(want))
		}
	}
}

// TestDecodeV1 reads a batch of version 1, which tailers wrote before.
func TestDecodeV1(t *testing.T) {
	want := []Hit{
		{Time: time.Unix(1431857103, 0).UTC(), Site: "example.com", Path: "/pricing", Method: "GET", Status: 200, Bytes: 1234, Referer: "-", Offset: 0},
		{Time: time.Unix(1431857100, 0).UTC(), Site: "example.com", Path: "/", Method: "GET", Status: 304, Offset: 1 << 40},
	}
	data := []byte("PWH1")
	for _, h := range want {
		data = appendV1(data, h)
	}
	got, err := Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// TestDecodeV2 reads a batch of version 2, which tailers wrote before
// they classified clients: its hits are counted, of class unknown, with
// no client key, and its user agents are read past.
func TestDecodeV2(t *testing.T) {
	want := []Hit{
		{Time: time.Unix(1431857103, 0).UTC(), Site: "example.com", Path: "/pricing", Method: "GET", Status: 200, Bytes: 1234, Referer: "-", Offset: 7},
		{Time: time.Unix(1431857100, 0).UTC(), Site: "example.com", Path: "/", Method: "GET", Status: 304, Offset: 1 << 40},
	}
	data := []byte("PWH2")
	var t0 int64
	var off uint64
	for _, h := range want {
		data = binary.AppendVarint(data, h.Time.Unix()-t0)
		data = binary.AppendVarint(data, int64(h.Offset-off))
		t0, off = h.Time.Unix(), h.Offset
		data = binary.AppendUvarint(data, uint64(h.Status))
		data = binary.AppendUvarint(data, h.Bytes)
		for _, s := range [...]string{h.Site, h.Path, h.Method, h.Referer, "Mozilla/5.0"} {
			data = binary.AppendUvarint(data, uint64(len(s))<<1)
			data = append(data, s...)
		}
	}
	got, err := Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	var lean Lean
	sameAsDecode(t, data, &lean)
}

func FuzzDecode(f *testing.F) {
	var e Encoder
	e.Add(&Hit{Time: time.Unix(5, 0), Path: "/a", Status: 200})
	f.Add(e.Bytes())
	e.Add(&Hit{Time: time.Unix(6, 0), Path: "/a", Status: 200})
	f.Add(e.Bytes())
	f.Add([]byte("PWH1\xff\xff\xff"))
	f.Add([]byte("PWH2\x00\x00\x00\x00\x03"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Decode(data, nil); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error not ErrCorrupt: %v", err)
		}
	})
}

// FuzzRoundTrip encodes hits whose strings are cut from the input, many
// of them repeated, and decodes them back.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("example.com|/a|GET|-|curl|/b|GET|-|curl|/a"), uint64(5))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		parts := strings.Split(string(data), "|")
		var e Encoder
		var want []Hit
		for i := 0; i+4 < len(parts) && i < 5000; i += 3 {
			h := Hit{Time: time.Unix(int64(seed)+int64(i)*int64(seed%7)-1000, 0).UTC(), Site: parts[i], Path: parts[i+1],
				Method: parts[i+2], Referer: parts[i+3], Class: Class(seed % uint64(numClasses)), Uncounted: seed&1 == 1,
				Client: seed * uint64(i), Status: uint16(seed % 1000),
				Bytes: seed >> 3, Offset: seed * uint64(i)}
			e.Add(&h)
			want = append(want, h)
		}
		got, err := Decode(e.Bytes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
	})
}

// BenchmarkDecode decodes a 5,000-hit message shaped like real traffic.
func BenchmarkDecode(b *testing.B) {
	var e Encoder
	for i := 0; i < 5000; i++ {
		e.Add(&Hit{Time: time.Unix(1431857103+int64(i), 0), Site: "example.com", Path: "/blog/2015/05/some-post.html",
			Method: "GET", Status: 200, Bytes: 12345, Referer: "https://www.google.com/search?q=pagewatch",
			Class: ClassHuman, Client: uint64(i%700) * 0x9E3779B97F4A7C15, Offset: uint64(i * 200)})
	}
	data := e.Bytes()
	dst := make([]Hit, 0, 5000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if dst, err = Decode(data, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*5000)/b.Elapsed().Seconds(), "hits/s")
}

// BenchmarkEncode encodes 5,000-hit batches with real traffic's
// repetition: one site, 1,000 pages, 300 clients, 100 referers.
func BenchmarkEncode(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	hits := make([]Hit, 5000)
	for i := range hits {
		hits[i] = Hit{Time: time.Unix(1431857103+int64(i/10), 0), Site: "example.com",
			Path: fmt.Sprintf("/blog/2015/05/post-%d.html", rng.IntN(1000)), Method: "GET", Status: 200, Bytes: 12345,
			Referer: fmt.Sprintf("https://www.google.com/search?q=pagewatch+%d", rng.IntN(100)),
			Class:   ClassHuman, Client: uint64(rng.IntN(300)) * 0x9E3779B97F4A7C15,
			Offset: uint64(i * 200)}
	}
	var e Encoder
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Reset()
		for j := range hits {
			e.Add(&hits[j])
		}
	}
	b.ReportMetric(float64(b.N*len(hits))/b.Elapsed().Seconds(), "hits/s")
	b.ReportMetric(float64(e.Size())/float64(len(hits)), "bytes/hit")
}
