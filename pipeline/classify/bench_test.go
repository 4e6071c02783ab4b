package classify_test

import (
	"testing"

	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/pipeline/classify"
)

// BenchmarkClassify classifies the user agents of the real log's lines in
// order, as a tailer meets them: uncached (the Classifier, each line a
// search of the list) and cached (a tailer's Cache). ns/ua is per line.
func BenchmarkClassify(b *testing.B) {
	entries := realEntries(b)
	uas := make([][]byte, len(entries))
	for i := range entries {
		uas[i] = entries[i].UserAgent
	}
	if len(uas) == 0 {
		b.Skip(realdata.ApacheLog + " has no lines")
	}
	c := newClassifier(b, classify.DefaultExtra())
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			c.Class(uas[n%len(uas)])
			n++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/ua")
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		k := c.NewCache(0)
		n := 0
		for b.Loop() {
			k.Class(uas[n%len(uas)])
			n++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/ua")
	})
}
