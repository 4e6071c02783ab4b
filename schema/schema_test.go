package schema

import "testing"

func TestMigrationsParse(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Version != 1 {
		t.Fatalf("want migrations starting at 1, got %+v", ms)
	}
	if got := len(ms[0].Statements); got != 4 {
		t.Fatalf("0001 has %d statements, want 4", got)
	}
}

func TestSplit(t *testing.T) {
	got := Split("-- c\nSELECT 1;\n\nSELECT\n  2;\nSELECT 3")
	want := []string{"SELECT 1", "SELECT\n  2", "SELECT 3"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("stmt %d: got %q want %q", i, got[i], want[i])
		}
	}
}
