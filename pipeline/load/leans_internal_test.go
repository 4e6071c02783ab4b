package load

import "testing"

// A loader's free list of decoded messages holds what it holds at once
// under its own settings: 80 with the defaults, as when it was one list
// sized to them for every loader.
func TestLeanListIsSizedFromTheConfig(t *testing.T) {
	for _, tc := range []struct {
		inserts, batchRows, want int
	}{
		{2, 100_000, 80}, // the defaults: 4 batches of 20 messages
		{4, 100_000, 120},
		{1, 1_000_000, 600},
		{2, 1_000, 4}, // a batch of less than a message still holds one
	} {
		cfg := DefaultConfig()
		cfg.Inserts, cfg.BatchRows = tc.inserts, tc.batchRows
		if got := cap(newLeanList(cfg)); got != tc.want {
			t.Errorf("inserts %d, batch_rows %d: room for %d, want %d", tc.inserts, tc.batchRows, got, tc.want)
		}
	}
	if d := DefaultConfig(); d.Inserts != 2 || d.BatchRows != 100_000 {
		t.Errorf("defaults changed (inserts %d, batch_rows %d): update the first case", d.Inserts, d.BatchRows)
	}
}
