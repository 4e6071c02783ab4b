package discover_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/discover"
)

func Example() {
	dir, err := os.MkdirTemp("", "discover-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	write := func(rel string) {
		p := filepath.Join(dir, rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.WriteFile(p, []byte("x\n"), 0o644)
	}
	for _, f := range []string{"nginx/access.log", "nginx/access.log.1", "nginx/access.log.2.gz", "sites/shop/logs/access.log"} {
		write(f)
	}

	cfg := discover.DefaultConfig()
	cfg.Paths = []string{dir + "/nginx/*", dir + "/sites/**/access.log"} // ingest.tail.inputs[i].path
	w, err := discover.New(cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	show := func(p string) string { r, _ := filepath.Rel(dir, p); return r }

	// What is there now; rotated siblings are left to rotation handling.
	files, err := w.Scan()
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		fmt.Println("scan:", show(f))
	}

	// What is there, then what appears.
	ctx, cancel := context.WithCancel(context.Background())
	found := make(chan discover.Found)
	done := make(chan error)
	go func() { done <- w.Run(ctx, func(f discover.Found) { found <- f }) }()
	for range 2 {
		f := <-found
		fmt.Println("found:", show(f.Path), "input", f.Pattern, "at start", f.AtStart)
	}
	write("sites/blog/logs/access.log")
	f := <-found
	fmt.Println("found:", show(f.Path), "input", f.Pattern, "at start", f.AtStart)
	input, _ := w.Match(f.Path) // the same, from the path alone
	fmt.Println("input of", show(f.Path)+":", input)
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	// Output:
	// scan: nginx/access.log
	// scan: sites/shop/logs/access.log
	// found: nginx/access.log input 0 at start true
	// found: sites/shop/logs/access.log input 1 at start true
	// found: sites/blog/logs/access.log input 1 at start false
	// input of sites/blog/logs/access.log: 1
}
