package config_test

import (
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/config"
)

func TestReportsValidateNamingKeys(t *testing.T) {
	cfg, err := parse(t, `
reports:
  - {name: weekly, site: example.com, schedule: "0 8 * * 1", period: week, zone: Europe/Berlin, receivers: [email], to: [a@example.com]}
  - {name: weekly, site: "", schedule: "61 * * * *", period: year, zone: Mars/Olympus, top: 0, receivers: [nope]}
`)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(config.Worker)
	for _, want := range []string{`reports[1].name: "weekly" given twice`, "reports[1].site", "reports[1].schedule", "reports[1].period", "reports[1].zone", `reports[1].receivers: no receiver named "nope"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to name %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "reports[0]") {
		t.Errorf("the valid report refused: %v", err)
	}
}
