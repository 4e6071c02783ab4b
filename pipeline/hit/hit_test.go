package hit

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	in := []Hit{
		{Time: time.Unix(1431857103, 0).UTC(), Site: "example.com", Path: "/pricing", Method: "GET", Status: 200, Bytes: 1234, Referer: "-", UserAgent: "curl/8", Offset: 0},
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

func FuzzDecode(f *testing.F) {
	var e Encoder
	e.Add(&Hit{Time: time.Unix(5, 0), Path: "/a", Status: 200})
	f.Add(e.Bytes())
	f.Add([]byte("PWH1\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Decode(data, nil); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error not ErrCorrupt: %v", err)
		}
	})
}

// BenchmarkDecode decodes a 5,000-hit message shaped like real traffic.
func BenchmarkDecode(b *testing.B) {
	var e Encoder
	for i := 0; i < 5000; i++ {
		e.Add(&Hit{Time: time.Unix(1431857103+int64(i), 0), Site: "example.com", Path: "/blog/2015/05/some-post.html",
			Method: "GET", Status: 200, Bytes: 12345, Referer: "https://www.google.com/search?q=pagewatch",
			UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36", Offset: uint64(i * 200)})
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
