package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// Every kind of sinks/webhook is a receiver type with nothing in config
// naming it: its block decodes strictly (an unknown key is an error
// naming it), the type's error lists it, a block of another type is
// refused, and --check-config prints its key.
func TestEveryKindIsAReceiverType(t *testing.T) {
	kinds := webhook.Kinds()
	if len(kinds) < 2 {
		t.Fatalf("%d kinds", len(kinds))
	}
	cfg, err := parse(t, "receivers:\n  - {name: x, type: pigeon}\n")
	must(t, err)
	typeErr := fmt.Sprint(cfg.Validate(config.Worker))
	def, err := config.Default().Redacted()
	must(t, err)
	for _, k := range kinds {
		_, err := parse(t, fmt.Sprintf("receivers:\n  - name: x\n    type: %s\n    %s: {bogus: 1}\n", k.Name, k.Name))
		if want := fmt.Sprintf("receivers[0].%s.bogus (line 4): unknown key", k.Name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", k.Name, err, want)
		}
		if !strings.Contains(typeErr, k.Name) {
			t.Errorf("the type's error does not list %s: %s", k.Name, typeErr)
		}
		cfg, err := parse(t, fmt.Sprintf("receivers:\n  - {name: x, type: email, %s: {}}\n", k.Name))
		must(t, err)
		if err, want := fmt.Sprint(cfg.Validate(config.Worker)), fmt.Sprintf("receivers[0].%s: given for a receiver of type email", k.Name); !strings.Contains(err, want) {
			t.Errorf("got %s, want %q", err, want)
		}
		if !strings.Contains(string(def), "    "+k.Name+": null\n") {
			t.Errorf("--check-config does not show %s:\n%s", k.Name, def)
		}
	}
	names := []string{"email"}
	for _, k := range kinds {
		names = append(names, k.Name)
	}
	want := fmt.Sprintf(`receivers[0].type: must be %s or %s, got "pigeon"`, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	if !strings.Contains(typeErr, want) {
		t.Errorf("got %s, want %q", typeErr, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
