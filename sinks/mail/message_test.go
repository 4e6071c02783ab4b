package mail

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/pipeline/notify"
)

func TestClean(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"/pricing", 200, "/pricing"},
		{"a\r\nb\tc\x00d", 200, "a\uFFFD\uFFFDb\uFFFDc\uFFFDd"},
		{"bad\xffutf8", 200, "bad\uFFFDutf8"},
		{"rtl\u202eoverride", 200, "rtl\uFFFDoverride"},
		{"line\u2028sep", 200, "line\uFFFDsep"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"ééééééé", 3, "éé…"},
	}
	for _, tt := range tests {
		if got := clean(tt.in, tt.limit); got != tt.want {
			t.Errorf("clean(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
	long := clean(strings.Repeat("x", 10<<10), maxBodyRunes)
	if utf8.RuneCountInString(long) != maxBodyRunes {
		t.Errorf("long value kept %d runes, want %d", utf8.RuneCountInString(long), maxBodyRunes)
	}
}

func TestSubject(t *testing.T) {
	n := notify.Notification{Path: "/pricing", Threshold: 1000, Window: "1h"}
	if got, want := newView(n).Subject, "[pagewatch] /pricing passed 1,000 views in 1h"; got != want {
		t.Errorf("subject = %q, want %q", got, want)
	}
	for _, window := range []string{"all time", "All Time", ""} {
		n := notify.Notification{Path: "/pricing", Threshold: 10000, Window: window}
		if got, want := newView(n).Subject, "[pagewatch] /pricing passed 10,000 views"; got != want {
			t.Errorf("window %q: subject = %q, want %q", window, got, want)
		}
	}
	if got := newView(notify.Notification{Path: "\r\n", Window: "1h"}).Subject; !strings.Contains(got, "\uFFFD") {
		t.Errorf("subject for control-only path = %q", got)
	}
	if got := newView(notify.Notification{Window: "1h"}).Subject; got != "[pagewatch] (empty) passed 0 views in 1h" {
		t.Errorf("subject for empty path = %q", got)
	}
}
