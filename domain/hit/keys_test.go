package hit_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/pagewatch/pagewatch/domain/hit"
)

func TestKeys(t *testing.T) {
	file := func(id, start, end string) nats.Header {
		h := nats.Header{}
		h.Set(hit.HeaderSource, "web1/var/log/nginx/access.log")
		h.Set(hit.HeaderFile, id)
		h.Set(hit.HeaderStart, start)
		h.Set(hit.HeaderEnd, end)
		return h
	}
	k1, l1 := hit.Keys(file("64768:12:1024:00aa", "0", "300").Get)
	if k1 == 0 || l1 == 0 || k1>>63 != 1 || l1>>63 != 1 {
		t.Fatalf("keys %x %x: want both set, top bit set (never a JetStream sequence)", k1, l1)
	}
	// The same file's content under another inode (a copy, a .gz): the
	// same keys. Another range: the same line key, another message key.
	if k, l := hit.Keys(file("0:0:1024:00aa", "0", "300").Get); k != k1 || l != l1 {
		t.Errorf("gzipped copy: keys %x %x, want %x %x", k, l, k1, l1)
	}
	if k, l := hit.Keys(file("64768:12:1024:00aa", "300", "500").Get); k == k1 || l != l1 {
		t.Errorf("next range: keys %x %x; want another message key, line key %x", k, l, l1)
	}
	if _, l := hit.Keys(file("64768:12:1024:00bb", "0", "300").Get); l == l1 {
		t.Errorf("another file (head) has the same line key")
	}
	other := file("64768:12:1024:00aa", "0", "300")
	other.Set(hit.HeaderSource, "web2/var/log/nginx/access.log")
	if _, l := hit.Keys(other.Get); l == l1 {
		t.Errorf("another host's file has the same line key")
	}

	// A stdin batch: its message id names it; its stream without the
	// batch number names what its offsets count in.
	batch := func(id string) nats.Header {
		h := nats.Header{}
		h.Set(hit.HeaderStream, "stdin.1700000000")
		h.Set("Nats-Msg-Id", id)
		return h
	}
	s1, sl1 := hit.Keys(batch("web1.stdin.1700000000.7").Get)
	s2, sl2 := hit.Keys(batch("web1.stdin.1700000000.8").Get)
	if s1 == 0 || s1 == s2 || sl1 != sl2 {
		t.Errorf("stdin batches 7 and 8: keys %x %x, line keys %x %x; want distinct keys, one line key", s1, s2, sl1, sl2)
	}

	// Published before these headers: the sequence stays the key.
	if k, l := hit.Keys(nats.Header{}.Get); k != 0 || l != 0 {
		t.Errorf("old message: keys %x %x, want 0 0", k, l)
	}
	b := hit.Batch{Seq: 42}
	if b.MsgKey() != 42 || b.HitKey() != 42 {
		t.Errorf("old batch keys %d %d, want its sequence", b.MsgKey(), b.HitKey())
	}
}
