// Command ingest moves page hits from access logs into ClickHouse:
// `ingest tail` publishes them to JetStream, `ingest load` inserts them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

var program = daemon.Program{
	Name: "ingest",
	Description: `ingest moves page hits from web-server access logs into ClickHouse, in two
halves that run as separate processes:

  tail  follows access-log files (nginx/Apache combined format), survives
        rotation and restarts, and publishes page hits to NATS JetStream.
        Its position in each file is kept in JetStream with the hits, so a
        restarted tailer neither skips nor repeats a line.
  load  takes hits from JetStream in large batches and inserts them into
        ClickHouse, acknowledging only after the insert. Run as many as you
        like; a batch loaded twice is still counted once.`,
	Commands: []daemon.Command{
		{Name: "tail", Part: config.IngestTail, Summary: "follow access logs and publish page hits to JetStream", Run: runTail},
		{Name: "load", Part: config.IngestLoad, Summary: "load page hits from JetStream into ClickHouse", Run: runLoad},
	},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(daemon.Main(ctx, program, os.Args[1:], os.Stdout, os.Stderr))
}

func runTail(ctx context.Context, env *daemon.Env) error {
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	t, err := tail.New(ctx, env.Config.Ingest.Tail, b, env.Logger, env.Registry)
	if err != nil {
		return err
	}
	return env.Serve(ctx, env.Config.Ingest.Tail.Listen, t)
}

func runLoad(ctx context.Context, env *daemon.Env) error {
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	ch, err := env.ClickHouse(ctx)
	if err != nil {
		return err
	}
	l, err := load.New(ctx, env.Config.Ingest.Load, b, ch, env.Logger, env.Registry)
	if err != nil {
		return err
	}
	return env.Serve(ctx, env.Config.Ingest.Load.Listen, l)
}
