package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/pipeline/links"
)

func TestUnsubscribesCommands(t *testing.T) {
	ns := natstest.Start(t)
	cfg := fmt.Sprintf("nats: {url: %q}\n", ns.URL)
	bc := bus.DefaultConfig()
	bc.URL = ns.URL
	b, err := bus.Connect(context.Background(), bc, t.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	u, err := links.OpenUnsubscribes(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Add(t.Context(), "pricing-hourly", "Ann@Example.com", time.Now()); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runWorker(t, cfg, "unsubscribes", "list")
	if code != 0 || !strings.Contains(out, "pricing-hourly  Ann@Example.com") {
		t.Fatalf("list: exit %d:\n%s%s", code, out, errs)
	}
	if code, out, errs := runWorker(t, cfg, "unsubscribes", "remove", "pricing-hourly", "ann@example.com"); code != 0 || !strings.Contains(out, "again") {
		t.Fatalf("remove: exit %d: %s%s", code, out, errs)
	}
	if has, _ := u.Has(t.Context(), "pricing-hourly", "ann@example.com"); has {
		t.Fatal("still unsubscribed")
	}
	if code, _, errs := runWorker(t, cfg, "unsubscribes", "remove", "pricing-hourly", "ann@example.com"); code != daemon.ExitUsage || !strings.Contains(errs, "not unsubscribed") {
		t.Errorf("remove again: exit %d: %s", code, errs)
	}
}
