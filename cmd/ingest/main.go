// Command ingest moves page hits from access logs into ClickHouse:
// `ingest tail` publishes them to JetStream, `ingest load` inserts them.
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strconv"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/ingestconf"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/pipeline/retention"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

var program = daemon.Program[ingestconf.Config]{Defaults: ingestconf.Default,
	Name: "ingest",
	Description: `ingest moves page hits from web-server access logs into ClickHouse, in two
halves that run as separate processes:

  tail  follows access-log files by path or glob (nginx and Apache presets,
        or the server's own log_format / LogFormat / JSON template), through
        rotation, deletion and restarts, and publishes page views to NATS
        JetStream. Its position in each file is kept in JetStream with the
        hits, so a restarted tailer neither skips nor repeats a line. It can
        also listen for syslog (ingest.tail.syslog) or read a pipe (--stdin);
        those cannot be replayed after a crash.
  load  takes hits from JetStream in large batches and inserts them into
        ClickHouse, acknowledging only after the insert. Run as many as you
        like; a batch loaded twice is still counted once. Loaders also drop
        raw hits older than ingest.load.retention.raw_hits_days.`,
	Commands: []daemon.Command[ingestconf.Config]{tailCommand(), loadCommand()},
}

func main() { os.Exit(daemon.Exec(program)) }

// tailFlags are `ingest tail`'s flags.
type tailFlags struct {
	fromStart, backfillOnly, stdin bool
	classify                       classifyFlags
}

func (f *tailFlags) bind(fs *flag.FlagSet) {
	fs.BoolVar(&f.fromStart, "from-start", false, "tail: first publish every input's rotated logs (access.log.1, access.log.2.gz, ...) not published yet, oldest first, and each file without a saved position from its beginning; then follow as usual. Safe to interrupt and to run again within nats.hits_max_age; past that the stream no longer says what was published, so run it once, not on every start")
	fs.BoolVar(&f.backfillOnly, "backfill-only", false, "tail: with --from-start, exit once every file has been read to its end instead of following")
	f.classify.bind(fs)
	fs.BoolVar(&f.stdin, "stdin", false, `tail: read access-log lines from standard input (Apache: CustomLog "|/usr/bin/ingest tail --stdin --config /etc/pagewatch.yaml" combined), in ingest.tail.stdin's format, instead of the files and syslog; exit at end of input. Lines in the pipe when ingest dies are lost. No admin endpoint`)
}

func tailCommand() daemon.Command[ingestconf.Config] {
	var f tailFlags
	return daemon.Command[ingestconf.Config]{Name: "tail", Part: file.IngestTail, Summary: "follow access logs and publish page hits to JetStream (first backfilling rotated logs, with --from-start)",
		Flags:     f.bind,
		Listen:    func(c ingestconf.Config) string { return tailListen(c, f) },
		Configure: f.classify.configure,
		Run:       func(ctx context.Context, env *daemon.Env[ingestconf.Config]) error { return runTail(ctx, env, f) },
	}
}

// loadFlags are `ingest load`'s flags.
type loadFlags struct {
	replayFrom string
}

func (f *loadFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.replayFrom, "replay-from", "", `load: load again every hit JetStream holds since a time, then exit: "start", an RFC 3339 time, or a duration ago ("24h"). Rebuilds ClickHouse; loading a hit twice changes no count`)
}

func loadCommand() daemon.Command[ingestconf.Config] {
	var f loadFlags
	return daemon.Command[ingestconf.Config]{Name: "load", Part: file.IngestLoad, Summary: "load page hits from JetStream into ClickHouse (or replay them, with --replay-from)",
		Flags:  f.bind,
		Listen: func(c ingestconf.Config) string { return c.Ingest.Load.Listen },
		Run:    func(ctx context.Context, env *daemon.Env[ingestconf.Config]) error { return runLoad(ctx, env, f) },
	}
}

func runTail(ctx context.Context, env *daemon.Env[ingestconf.Config], f tailFlags) error {
	if f.backfillOnly && !f.fromStart {
		return &daemon.UsageError{Err: errors.New("--backfill-only needs --from-start")}
	}
	if f.classify.file != "" {
		return runClassify(env, f)
	}
	if f.stdin {
		return runStdin(ctx, env, f)
	}
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	var opts []tail.Option
	if f.fromStart {
		// A redrawn progress line when stderr is a terminal, a log line
		// every 30s otherwise (systemd, redirected output).
		opts = append(opts, tail.WithBackfill(tail.BackfillOptions{Progress: env.Stderr, Only: f.backfillOnly}))
	}
	now, err := env.Clock()
	if err != nil {
		return err
	}
	t, err := tail.New(env.Config.Ingest.Tail, tail.Deps{Bus: b, Logger: env.Logger, Registry: env.Registry, Now: now}, opts...)
	if err != nil {
		return err
	}
	return env.Serve(ctx, t)
}

// tailListen is ingest.tail.listen, except for --stdin (see runStdin).
func tailListen(c ingestconf.Config, f tailFlags) string {
	if f.stdin || f.classify.file != "" {
		return ""
	}
	return c.Ingest.Tail.Listen
}

// runStdin is `ingest tail --stdin`. It serves no admin endpoint: Apache
// starts a piped logger per CustomLog, beside the `ingest tail` daemon
// that holds ingest.tail.listen, so no one address could be theirs.
func runStdin(ctx context.Context, env *daemon.Env[ingestconf.Config], f tailFlags) error {
	if f.fromStart {
		return &daemon.UsageError{Err: errors.New("--stdin cannot be given with --from-start: standard input has no rotated logs")}
	}
	if err := env.Config.Ingest.Tail.ValidateStdin(); err != nil {
		return &daemon.UsageError{Err: err}
	}
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	s, err := tail.NewStdin(ctx, env.Config.Ingest.Tail, b, os.Stdin, env.Logger, env.Registry)
	if err != nil {
		return err
	}
	return env.Serve(ctx, s)
}

func runLoad(ctx context.Context, env *daemon.Env[ingestconf.Config], f loadFlags) error {
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	ch, err := env.ClickHouse(ctx)
	if err != nil {
		return err
	}
	cfg := env.Config.Ingest.Load
	if f.replayFrom != "" {
		from, err := load.ParseReplayFrom(f.replayFrom, time.Now())
		if err != nil {
			return err
		}
		l, err := load.NewReplay(cfg, load.Deps{Bus: b, Store: ch.Hits(), Logger: env.Logger, Registry: env.Registry}, from)
		if err != nil {
			return err
		}
		return env.Serve(ctx, l)
	}
	l, err := load.New(cfg, load.Deps{Bus: b, Store: ch.Hits(), Logger: env.Logger, Registry: env.Registry})
	if err != nil {
		return err
	}
	// Loaders claim each retention period in NATS KV, so a cluster of
	// loaders drops old days once per period, not once per loader.
	claims, err := b.KV(ctx, bus.BucketRetention, retention.ClaimsTTL)
	if err != nil {
		return err
	}
	r, err := retention.New(cfg.Retention, retention.Deps{Store: ch.Hits(), Claims: claims, Owner: loaderName(), Logger: env.Logger, Registry: env.Registry})
	if err != nil {
		return err
	}
	return env.Serve(ctx, daemon.Together(l, r))
}

// loaderName names this loader in its retention claims, for operators.
func loaderName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return host + "/" + strconv.Itoa(os.Getpid())
}
