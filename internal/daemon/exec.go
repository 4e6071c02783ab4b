package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Exec is main's, the same for the four commands:
//
//	func main() { os.Exit(daemon.Exec(program)) }
//
// It runs p on the process's arguments and standard streams and returns
// the exit code. Signals are handled here and only here: SIGINT and
// SIGTERM cancel the context the command runs with (it drains and stops),
// and each SIGHUP reloads the config file (Main's reload).
func Exec[C Config](p Program[C]) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return Main(ctx, p, os.Args[1:], os.Stdout, os.Stderr, hup)
}
