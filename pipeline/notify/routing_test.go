package notify_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

func TestRoutingFirstMatchContinueAndDefault(t *testing.T) {
	r := notify.Routing{
		Receivers: []string{"email"},
		Routes: []notify.Route{
			{Match: crossing.Match{Site: "shop.example"}, Receivers: []string{"shop-slack"}, Routes: []notify.Route{
				{Match: crossing.Match{Page: "/checkout/**"}, Receivers: []string{"pager", "shop-slack"}},
			}},
			{Match: crossing.Match{Labels: map[string]string{"team": "web"}}, Receivers: []string{"web-teams"}, Continue: true},
			{Match: crossing.Match{Rule: "launch"}, Receivers: []string{"discord"}},
			{Match: crossing.Match{Page: "/blog/*"}, Receivers: []string{"hook"}},
		},
	}
	cases := []struct {
		x    crossing.Crossing
		want []string
	}{
		{crossing.Crossing{Site: "shop.example", Path: "/cart"}, []string{"shop-slack"}},
		{crossing.Crossing{Site: "shop.example", Path: "/checkout/pay/now"}, []string{"pager", "shop-slack"}},
		// First match wins: the shop route takes it before the label route.
		{crossing.Crossing{Site: "shop.example", Path: "/x", Labels: map[string]string{"team": "web"}}, []string{"shop-slack"}},
		// continue: the label route and the next match both get it.
		{crossing.Crossing{Site: "a.example", Rule: "launch", Path: "/", Labels: map[string]string{"team": "web"}}, []string{"web-teams", "discord"}},
		{crossing.Crossing{Site: "a.example", Path: "/", Labels: map[string]string{"team": "web"}}, []string{"web-teams"}},
		{crossing.Crossing{Site: "a.example", Path: "/blog/post"}, []string{"hook"}},
		{crossing.Crossing{Site: "a.example", Path: "/blog/2026/post"}, []string{"email"}}, // * stops at /
		{crossing.Crossing{Site: "a.example", Path: "/"}, []string{"email"}},
		// A rule that names its receivers skips the routing.
		{crossing.Crossing{Site: "shop.example", Path: "/", Receivers: []string{"hook", "hook"}}, []string{"hook"}},
	}
	for _, c := range cases {
		if got := r.Route(c.x); !slices.Equal(got, c.want) {
			t.Errorf("%s %s %v: got %v, want %v", c.x.Site, c.x.Path, c.x.Labels, got, c.want)
		}
	}
}

func TestRoutingValidateNamesTheKey(t *testing.T) {
	r := notify.Routing{Receivers: []string{"email"}, Routes: []notify.Route{
		{Match: crossing.Match{Page: "blog"}, Receivers: []string{"nope"}},
		{Match: crossing.Match{Site: "x"}},
	}}
	err := r.Validate("worker.routing", []string{"email"})
	for _, want := range []string{
		`worker.routing.routes[0].match.page: a glob over the path`,
		`worker.routing.routes[0].receivers: no receiver named "nope"`,
		`worker.routing.routes[1]: names no receivers and has no routes`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to contain %q", err, want)
		}
	}
	if err := (notify.Routing{}).Validate("worker.routing", []string{"email"}); err == nil || !strings.Contains(err.Error(), "worker.routing.receivers: the default receivers must be set") {
		t.Errorf("empty routing: %v", err)
	}
}
