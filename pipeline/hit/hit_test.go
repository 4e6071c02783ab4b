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
