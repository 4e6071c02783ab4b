package tail

import "testing"

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"example.com":          "example.com",
		"WWW.Example.COM:8080": "www.example.com",
		"example.com.":         "example.com",
		"example.com:":         "example.com:",
		"10.0.0.1:80":          "10.0.0.1",
		"[2001:db8::1]:443":    "[2001:db8::1]",
		"[2001:db8::1]":        "[2001:db8::1]",
		"2001:db8::1":          "2001:db8::1",
		"-":                    "",
		"":                     "",
	} {
		if got := normalizeHost([]byte(in)); got != want {
			t.Errorf("normalizeHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSiteOfDoesNotAllocateForKnownVhosts(t *testing.T) {
	var b hitBatch
	v := []byte("Example.com:443")
	if b.siteOf(v) != "example.com" {
		t.Fatal(b.siteOf(v))
	}
	if n := testing.AllocsPerRun(100, func() { b.siteOf(v) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
