package tail_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// sitesOf counts hits by site and checks every hit has a path.
func sitesOf(t *testing.T, b *bundle, n int) map[string]int {
	t.Helper()
	sites := map[string]int{}
	for _, h := range b.waitHits(t, n) {
		if h.Path == "" || h.Path[0] != '/' || h.Time.IsZero() {
			t.Fatalf("hit: %+v", h)
		}
		sites[h.Site]++
	}
	return sites
}

func TestVhostCombinedWithoutSiteCountsPerVhost(t *testing.T) {
	b := setup(t)
	b.cfg.Inputs[0].Site = ""
	b.cfg.Inputs[0].Format = "vhost_combined"
	hosts := []string{"www.example.com:443 ", "Blog.Example.org:80 ", "-:80 "}
	var lines [][]byte
	for i, l := range b.lines[:3000] {
		lines = append(lines, append([]byte(hosts[i%3]), l...))
	}
	stop := b.start(t)
	appendLines(t, b.log, lines)
	// A line whose vhost is "-" names no site: skipped, not published.
	sites := sitesOf(t, b, 2000)
	stop()
	if len(sites) != 2 || sites["www.example.com"] != 1000 || sites["blog.example.org"] != 1000 {
		t.Fatalf("hits per site: %v", sites)
	}
}

// With sites set, a line whose Host header names another site (a
// server that answers any name, a client making names up) is not
// counted; an input's own site always is.
func TestVhostSitesOutsideTheListAreNotCounted(t *testing.T) {
	b := setup(t)
	b.cfg.Inputs[0].Site = ""
	b.cfg.Inputs[0].Format = "vhost_combined"
	b.cfg.Pages.Sites = []string{"www.example.com", "*.example.org"}
	hosts := []string{"www.example.com:443 ", "Blog.Example.org:80 ", "made-up-42.attacker.example:80 "}
	var lines [][]byte
	for i, l := range b.lines[:3000] {
		lines = append(lines, append([]byte(hosts[i%3]), l...))
	}
	stop := b.start(t)
	appendLines(t, b.log, lines)
	sites := sitesOf(t, b, 2000)
	stop()
	if len(sites) != 2 || sites["www.example.com"] != 1000 || sites["blog.example.org"] != 1000 {
		t.Fatalf("hits per site: %v", sites)
	}
}

func TestCustomNginxFormat(t *testing.T) {
	b := setup(t)
	b.cfg.Inputs[0].NginxFormat = `$host $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time`
	// A second input without a site takes each line's $host.
	other := filepath.Join(b.dir, "other.log")
	b.cfg.Inputs = append(b.cfg.Inputs, tail.Input{Path: other, NginxFormat: b.cfg.Inputs[0].NginxFormat})
	var lines [][]byte
	for _, l := range b.lines[:500] {
		lines = append(lines, []byte("shop.example.net "+string(l)+" 0.004"))
	}
	stop := b.start(t)
	appendLines(t, b.log, lines)
	appendLines(t, other, lines[:200])
	sites := sitesOf(t, b, 700)
	stop()
	// The input's site wins over the vhost.
	if sites["example.com"] != 500 || sites["shop.example.net"] != 200 {
		t.Fatalf("hits per site: %v", sites)
	}
}

func TestJSONPreset(t *testing.T) {
	b := setup(t)
	b.cfg.Inputs[0].Site = ""
	b.cfg.Inputs[0].Format = "json"
	var lines [][]byte
	for i := 0; i < 1000; i++ {
		lines = append(lines, []byte(fmt.Sprintf(
			`{"time_iso8601":"2015-05-17T10:05:%02d+00:00","remote_addr":"10.0.0.%d","request":"GET /p/%d?x=1 HTTP/1.1","status":"200","body_bytes_sent":"%d","http_referer":"","http_user_agent":"ua \"q\"","host":"h%d.example"}`,
			i%60, i%250, i%7, i, i%2)))
	}
	stop := b.start(t)
	appendLines(t, b.log, lines)
	hits := b.waitHits(t, 1000)
	stop()
	sites, paths := map[string]int{}, map[string]int{}
	for _, h := range hits {
		sites[h.Site]++
		paths[h.Path]++
		if h.Status != 200 || h.Method != "GET" {
			t.Fatalf("hit: %+v", h)
		}
	}
	if sites["h0.example"] != 500 || sites["h1.example"] != 500 || paths["/p/0"] != 143 || len(paths) != 7 {
		t.Fatalf("sites %v, paths %v", sites, paths)
	}
}

func TestFormatValidation(t *testing.T) {
	for _, tt := range []struct {
		in   tail.Input
		want string
	}{
		{tail.Input{Site: "s", ApacheFormat: `%h %Z %t "%r"`},
			`ingest.tail.inputs[1].apache_format: "%Z" at byte 3: unknown directive`},
		{tail.Input{Site: "s", NginxFormat: `$remote_addr [$time_local]`},
			`ingest.tail.inputs[1].nginx_format: "format" at byte 26: logs neither the request`},
		{tail.Input{Site: "s", JSONFormat: `{"t":"$time_local"}`},
			`ingest.tail.inputs[1].json_format: template at byte 19: no key holds $request`},
		{tail.Input{Site: "s", Format: "w3c"},
			`ingest.tail.inputs[1].format: unknown format "w3c" (known: combined, common, json, nginx, vhost_combined)`},
		{tail.Input{Site: "s", Format: "common", NginxFormat: `$host "$request" $msec`},
			`ingest.tail.inputs[1].nginx_format: cannot be given with format`},
		{tail.Input{}, `ingest.tail.inputs[1].site: must be set, since format "combined" logs no virtual host`},
		{tail.Input{ApacheFormat: `%h %t "%r"`}, `ingest.tail.inputs[1].site: must be set, since apache_format`},
	} {
		cfg := tail.DefaultConfig()
		tt.in.Path = "/b"
		cfg.Inputs = []tail.Input{{Path: "/a", Site: "a"}, tt.in}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want %q", tt.in, err, tt.want)
		}
	}
	// Formats that log the vhost need no site.
	for _, in := range []tail.Input{
		{Format: "vhost_combined"}, {Format: "json"},
		{NginxFormat: `${server_name} [$time_local] "$request" $status`},
		{NginxFormat: `$http_host [$time_local] "$request" $status`},
		{ApacheFormat: `%V %t "%r" %>s`},
		{ApacheFormat: `%{host}i %t "%r" %>s`},
		{JSONFormat: `{"h":"$host","t":"$msec","r":"$request"}`},
	} {
		cfg := tail.DefaultConfig()
		in.Path = "/a"
		cfg.Inputs = []tail.Input{in}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", in, err)
		}
	}
}
