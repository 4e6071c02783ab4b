package prometheus_test

import (
	"os"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config"
)

// TestScrapeTargets: prometheus.yml scrapes every daemon as job
// pagewatch-<daemon> (what alerts.yml's job matchers expect) at its
// default admin listener, and probes that listener's /readyz.
func TestScrapeTargets(t *testing.T) {
	data, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	jobs := map[string][]string{}
	for _, sc := range p.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			jobs[sc.JobName] = append(jobs[sc.JobName], st.Targets...)
		}
	}
	d := config.Default()
	admin := map[string]string{
		"ingest-tail": d.Ingest.Tail.Listen,
		"ingest-load": d.Ingest.Load.Listen,
		"sweeper":     d.Sweeper.Listen,
		"worker":      d.Worker.Listen,
		"console":     d.Console.AdminListen,
	}
	for name, addr := range admin {
		if job := "pagewatch-" + name; !slices.Contains(jobs[job], addr) {
			t.Errorf("job %s: targets %v, want the default admin listener %s", job, jobs[job], addr)
		}
		if u := "http://" + addr + "/readyz"; !slices.Contains(jobs["pagewatch-readyz"], u) {
			t.Errorf("job pagewatch-readyz: targets lack %s", u)
		}
	}
	t.Logf("%d daemons' admin listeners scraped and probed", len(admin))
}
