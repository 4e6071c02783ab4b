package logformat

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStoreMatchesParse checks that the field switch written out in
// compiled.Parse takes and rejects the same values as store, which the
// JSON parser and truncated last fields use.
func TestStoreMatchesParse(t *testing.T) {
	values := []string{"", "-", "x", "200", "2000", "20x", "0", "-1", "1.2.3.4", "2001:db8::1",
		"a b", "a\x7fb", "\xff", "17/May/2015:10:05:03 +0000", "17/Mai/2015:10:05:03 +0000",
		"2015-05-17T10:05:03Z", "1431857103.250", "GET / HTTP/1.1", "\\x16\\x03", strings.Repeat("9", 18), strings.Repeat("9", 19)}
	for f := fSkip; f < nFields; f++ {
		// One quoted last field: the value is everything between the quotes.
		c := &compiled{head: []byte(`"`), steps: []step{{f: f, quoted: true}}}
		c.steps[0].setNext([]byte(`"`))
		c.steps[0].op = c.steps[0].opFor(true)
		for _, v := range values {
			var got, want Entry
			err := c.Parse([]byte(`"`+v+`"`), &got)
			var times timeCache
			ok := store(&want, f, []byte(v), &times)
			gw, gv := gotAll(&got)
			ww, wv := gotAll(&want)
			if (err == nil) != ok || err == nil && (gw != ww || gv != wv) {
				t.Errorf("%v %q: Parse gives %+v %q, %v; store gives %+v %q, %v", f, v, gw, gv, err, ww, wv, ok)
			}
		}
	}
}

// gotAll is got with the time in full, zero or not.
func gotAll(e *Entry) (want, string) {
	w, v := got(e)
	w.time = e.Time
	return w, v
}

// TestTimeCache parses a run of times through one cache, as a parser sees
// them: repeated days, new days, other zones and bad times in between.
func TestTimeCache(t *testing.T) {
	var c timeCache
	// An empty cache holds zero keys; a time whose day bytes are zeros
	// must not take its zero base.
	if got, ok := c.parse([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + "10:05:03" + "\x00\x00\x00\x00\x00\x00")); ok {
		t.Errorf("zero day bytes give %v", got)
	}
	var in []string
	for d := time.Date(2015, 2, 27, 22, 59, 58, 0, time.UTC); d.Before(time.Date(2015, 3, 2, 0, 0, 0, 0, time.UTC)); d = d.Add(47 * time.Minute) {
		for _, z := range []*time.Location{time.UTC, time.FixedZone("", -(3*3600 + 30*60)), time.FixedZone("", 14*3600)} {
			in = append(in, d.In(z).Format("02/Jan/2006:15:04:05 -0700"))
		}
		in = append(in, d.Format("02/Jan/2006:15:04:05 -0700"))
	}
	in = append(in, "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		"29/Feb/2015:10:05:03 +0000", "28/Feb/2015:24:05:03 +0000", "28/Feb/2015:10:60:03 +0000",
		"28/Feb/2015:10:05:60 +0000", "28/Feb/2015:10:05:03 +2400", "28/Feb/2015:10:05:03 *0000",
		"28/Feb/2015:10:05:03 +0000", "28/Feb/2015 10:05:03 +0000", "28/Feb/2015:10:05:03 +0000 ")
	// Twice, so that the bad times also meet a full cache.
	for _, s := range append(in, in...) {
		want, wok := parseTime([]byte(s))
		got, ok := c.parse([]byte(s))
		if ok != wok || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%q: cached %v %v, parseTime %v %v", s, got, ok, want, wok)
		}
		// time.Parse is laxer (it takes +2400), so it only checks times
		// parseTime takes.
		ref, err := time.Parse("02/Jan/2006:15:04:05 -0700", s)
		if wok && (err != nil || !ref.Equal(want)) {
			t.Errorf("%q: parseTime %v %v, time.Parse %v %v", s, want, wok, ref, err)
		}
	}
}

// TestTimeCacheConcurrent has goroutines in different days share a cache,
// as files of one glob share their parser; run it with -race.
func TestTimeCacheConcurrent(t *testing.T) {
	var c timeCache
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			day := time.Date(2015, 5, 17+g%2, 0, 0, 0, 0, time.UTC)
			for k := range 20000 {
				want := day.Add(time.Duration(k%86400) * time.Second)
				s := want.Format("02/Jan/2006:15:04:05 -0700")
				if got, ok := c.parse([]byte(s)); !ok || !got.Equal(want) {
					t.Errorf("goroutine %d: %q gives %v %v", g, s, got, ok)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestKeyTable checks keyTable.match against a map lookup of the key that
// stringEnd delimits, for keys near those of a template: sharing a prefix,
// cut short, run on, with escapes, and at the end of the line.
func TestKeyTable(t *testing.T) {
	keys := map[string]field{"a": fStatus, "ab": fBytes, "abc": fClient, "abcd": fUser,
		"abcdefg": fRequest, "abcdefgh": fReferer, "abcdefghi": fUserAgent,
		"abcdefghijklmnop": fVhost, "abcdefghijklmnopq": fMethod, "abcdefghijklmnopqrstu": fTarget,
		`q\"x`: fProto, `q\\`: fIdent, "time_local": fTimeLocal, "time_iso8601": fTimeISO}
	tab := newKeyTable(keys)
	cands := map[string]bool{"": true, `\`: true, `\"`: true, "abcdefghijklmnopqrstuvwxyz": true}
	for k := range keys {
		for n := 0; n <= len(k); n++ {
			cands[k[:n]] = true
			cands[k[:n]+"z"] = true
			cands["z"+k[n:]] = true
			if n < len(k) {
				cands[k[:n]+"_"+k[n+1:]] = true
				cands[k[:n]+`\"`+k[n:]] = true
			}
		}
	}
	for cand := range cands {
		for _, line := range []string{`{"` + cand + `":1}`, `"` + cand + `"`, `"` + cand, `"` + cand + `\"x":1`} {
			b := []byte(line)
			i := strings.IndexByte(line, '"')
			f, ok, end := tab.match(b, i)
			wend := stringEnd(b, i)
			var wf field
			var wok bool
			if wend >= 0 {
				wf, wok = keys[line[i+1:wend]]
			}
			if end != wend || ok != wok || f != wf {
				t.Errorf("%q: match gives %v %v %d, want %v %v %d", line, f, ok, end, wf, wok, wend)
			}
		}
	}
}
