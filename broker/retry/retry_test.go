package retry

import (
	"testing"
	"time"
)

func TestDelayIsCappedAndJittered(t *testing.T) {
	for attempt := 0; attempt < 100; attempt++ {
		d := Delay(attempt, 100*time.Millisecond, 30*time.Second)
		want := min(100*time.Millisecond<<min(attempt, 30), 30*time.Second)
		if d < want/2 || d > want {
			t.Fatalf("attempt %d: %s not in [%s, %s]", attempt, d, want/2, want)
		}
	}
}
