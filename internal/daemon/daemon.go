// Package daemon is what the four pagewatch commands (ingest, sweeper,
// worker, console) share: flags, the config file, logging, metrics, admin
// endpoints and a bounded shutdown.
// Signals are handled only in Exec, which is each command's main; the
// rest of this package sees a context and a reload channel.
package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pagewatch/pagewatch/config/file"
)

// Config is a daemon's view of the config file (config/ingestconf,
// sweeperconf, workerconf, consoleconf; config.Config is the whole file):
// the sections every daemon reads, validation by part, and a rendering
// with secrets masked. A binary links only what its view names.
type Config interface {
	Common() file.Base
	Validate(file.Part) error
	Redacted() ([]byte, error)
}

// logSetter is a view whose log section the flags override (file.Base
// has it, so every view embedding it does).
type logSetter interface{ SetLog(file.Log) }

// Program describes one command line program.
type Program[C Config] struct {
	Name        string // "ingest"
	Description string // a paragraph for --help
	Commands    []Command[C]
	// Default is the command run when none is named ("" requires one).
	Default string
	// Defaults is the config before the file: every default.
	Defaults func() C
}

// Command is one thing a program does.
type Command[C Config] struct {
	Name    string
	Summary string
	Part    file.Part // which config sections it validates
	// Flags adds command-specific flags, bound to a value of the
	// command's own (made with the Command) that its Run reads.
	Flags func(fs *flag.FlagSet)
	// Listen gives the admin endpoints' address from the config ("" or a
	// nil Listen: none). They are served from start-up, before the
	// command connects to anything, so /healthz answers while it waits.
	Listen func(C) string
	// Configure, when set, adjusts the loaded config to the command's
	// flags before it is validated: a mode that reads a file named on the
	// command line needs no input in the file.
	Configure func(*C)
	Run       func(ctx context.Context, env *Env[C]) error
	// Args, when set, lets the command take arguments after its name
	// (flags may come between them) and says which, for --help:
	// "add|list|expire [id]". They reach Run as Env.Args.
	Args string
}

// Env is what a command gets to run with.
type Env[C Config] struct {
	Config C
	// ConfigPath is the file Config came from ("" for the defaults), for
	// commands that read it again (the sweeper's rule reload).
	ConfigPath string
	Logger     *slog.Logger
	Registry   *prometheus.Registry
	// Args are the command's arguments (Command.Args).
	Args []string
	// Stdout is for a command's report (sweeper check, dry-run);
	// logs go to Stderr.
	Stdout  io.Writer
	Stderr  io.Writer
	name    string // "ingest tail"
	closers []func()
	admin   *adminState

	flags         flagOverrides
	level         *slog.LevelVar
	reloadMetrics *reloadMetrics
	reloadMu      sync.Mutex
	hooks         []reloadHook[C]
	started       C        // what keys no reload applies keep, for reload diffs
	defaults      func() C // the config before the file, for reloads
}

// flagOverrides are the config values a flag may override. Secrets have
// no flags: a flag is visible to every user of the host in ps.
type flagOverrides struct {
	logFormat, logLevel string
}

func (e *Env[C]) applyFlags(cfg *C) { applyFlags(e.flags, cfg) }

func (f flagOverrides) validate() error {
	switch f.logFormat {
	case "", "text", "json":
	default:
		return fmt.Errorf(`--log-format: must be "text" or "json", got %q`, f.logFormat)
	}
	switch f.logLevel {
	case "", "debug", "info", "warn", "error":
	default:
		return fmt.Errorf(`--log-level: must be debug, info, warn or error, got %q`, f.logLevel)
	}
	return nil
}

func applyFlags[C Config](f flagOverrides, cfg *C) {
	s, ok := any(cfg).(logSetter)
	if !ok {
		return
	}
	l := (*cfg).Common().Log
	if f.logFormat != "" {
		l.Format = f.logFormat
	}
	if f.logLevel != "" {
		l.Level = f.logLevel
	}
	s.SetLog(l)
}

// UsageError is a command's verdict that its input is invalid (a rule
// file, a flag): Main prints it and exits with ExitUsage, like a bad
// config.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Runner is a long-running part.
type Runner interface {
	Run(ctx context.Context) error
}

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2 // bad flags or config
)

// Main parses args, loads and validates the config, and runs a command.
// Each signal on reload (SIGHUP, from Exec; nil for none) reloads the
// config file. It returns the process exit code.
func Main[C Config](ctx context.Context, p Program[C], args []string, stdout, stderr io.Writer, reload <-chan os.Signal) int {
	var (
		configPath  string
		checkConfig bool
		flags       flagOverrides
	)
	fs := flag.NewFlagSet(p.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&configPath, "config", os.Getenv("PAGEWATCH_CONFIG"), "path of the YAML config file (default: $PAGEWATCH_CONFIG; without one, built-in defaults)")
	fs.BoolVar(&checkConfig, "check-config", false, "validate the config, print it with secrets masked, and exit (0 valid, 2 invalid)")
	fs.StringVar(&flags.logFormat, "log-format", "", `log format, "text" or "json" (default: log.format in the config, "text")`)
	fs.StringVar(&flags.logLevel, "log-level", "", `log level: debug, info, warn or error (default: log.level in the config, "info")`)
	for _, c := range p.Commands {
		if c.Flags != nil {
			c.Flags(fs)
		}
	}
	fs.Usage = func() { usage(stdout, p, fs) }
	// Flags may come before or after the command name.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	name := p.Default
	var cmdArgs []string
	if rest := fs.Args(); len(rest) > 0 {
		name = rest[0]
		c, _ := p.command(name)
		for rest = rest[1:]; ; rest = fs.Args()[1:] {
			if err := fs.Parse(rest); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return ExitOK
				}
				return ExitUsage
			}
			if fs.NArg() == 0 {
				break
			}
			if c.Args == "" {
				fmt.Fprintf(stderr, "%s: unexpected argument %q\n", p.Name, fs.Arg(0))
				return ExitUsage
			}
			cmdArgs = append(cmdArgs, fs.Arg(0))
		}
	}
	cmd, ok := p.command(name)
	if !ok {
		if name == "" {
			fmt.Fprintf(stderr, "%s: a command is needed\n\n", p.Name)
		} else {
			fmt.Fprintf(stderr, "%s: unknown command %q\n\n", p.Name, name)
		}
		usage(stderr, p, fs)
		return ExitUsage
	}

	if err := flags.validate(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
		return ExitUsage
	}
	cfg, err := file.Load(configPath, p.Defaults())
	if err == nil {
		applyFlags(flags, &cfg)
		if cmd.Configure != nil {
			cmd.Configure(&cfg)
		}
		err = cfg.Validate(cmd.Part)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: invalid configuration:\n  %s\n", p.Name, cmd.Name, strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return ExitUsage
	}
	if checkConfig {
		out, err := cfg.Redacted()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return ExitFailure
		}
		fmt.Fprintf(stdout, "# %s %s: configuration is valid\n%s", p.Name, cmd.Name, out)
		return ExitOK
	}

	name = p.Name + " " + cmd.Name
	env := &Env[C]{Config: cfg, ConfigPath: configPath, Args: cmdArgs, Stdout: stdout, Stderr: stderr, name: name,
		flags: flags, level: new(slog.LevelVar), started: cfg, defaults: p.Defaults}
	env.Logger = newLogger(cfg.Common().Log, env.level, stderr).With("daemon", name)
	env.Registry = prometheus.NewRegistry()
	env.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	env.reloadMetrics = newReloadMetrics(env.Registry)
	stopAdmin, err := env.startAdmin(cmd)
	if err != nil {
		env.Logger.Error("exiting on error", "err", err)
		return ExitFailure
	}
	defer stopAdmin()
	reloadCtx, stopReloads := context.WithCancel(ctx)
	var reloads sync.WaitGroup
	if reload != nil {
		reloads.Add(1)
		go env.watchReloads(reloadCtx, reload, cmd.Part, &reloads)
	}
	err = cmd.Run(ctx, env)
	stopReloads()
	reloads.Wait()
	for i := len(env.closers) - 1; i >= 0; i-- {
		env.closers[i]()
	}
	var usageErr *UsageError
	if errors.As(err, &usageErr) {
		fmt.Fprintf(stderr, "%s: %s\n", name, strings.ReplaceAll(usageErr.Error(), "\n", "\n  "))
		return ExitUsage
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		env.Logger.Error("exiting on error", "err", err)
		return ExitFailure
	}
	env.Logger.Info("stopped")
	return ExitOK
}

func (p Program[C]) command(name string) (Command[C], bool) {
	for _, c := range p.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command[C]{}, false
}

func usage[C Config](w io.Writer, p Program[C], fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s [flags] <command>\n\n%s\n\nCommands:\n", p.Name, strings.TrimSpace(p.Description))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range p.Commands {
		def := ""
		if c.Name == p.Default {
			def = " (default)"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\n", strings.TrimSpace(c.Name+" "+c.Args), c.Summary, def)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nFlags:\n")
	prev := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(prev)
	fmt.Fprintf(w, "\nThe config file is documented key by key in deploy/pagewatch.example.yaml.\n"+
		"Secrets in it may be {env: NAME} or {file: /path}; none can be given as a flag.\n"+
		"Signals: SIGTERM or SIGINT drain and stop within shutdown_timeout; SIGHUP reads the\n"+
		"config file again (rejected whole if invalid; log.level and the daemon's reloadable\n"+
		"sections are applied, other changes are logged as waiting for a restart).\n"+
		"Admin endpoints (the daemon's listen key): /metrics, /healthz, /readyz.\n"+
		"Exit codes: 0 ok, 1 runtime failure, 2 bad flags or configuration.\n")
}

func newLogger(c file.Log, level *slog.LevelVar, w io.Writer) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(c.Level))
	level.Set(l)
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
