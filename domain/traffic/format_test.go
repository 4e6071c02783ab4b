package traffic_test

import (
	"math"
	"testing"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

func TestFormatCount(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345", 1234567: "1,234,567", math.MaxUint64: "18,446,744,073,709,551,615"} {
		if got := traffic.FormatCount(n); got != want {
			t.Errorf("FormatCount(%d) = %q, want %q", n, got, want)
		}
	}
}
