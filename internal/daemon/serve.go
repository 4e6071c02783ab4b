package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pagewatch/pagewatch/internal/admin"
)

// Lifecycle states, as /readyz reports them beside the dependencies.
const (
	stateStarting int32 = iota
	stateRunning
	stateStopping
)

type adminState struct {
	srv   *admin.Server // nil: no endpoints
	state atomic.Int32
	err   chan error // the server's Run result
}

// startAdmin serves /metrics, /healthz and /readyz from start-up. Until
// Serve runs the command, /readyz says "starting"; once SIGTERM arrives,
// "stopping", so a load balancer or Kubernetes stops counting on the
// process while it drains.
func (e *Env[C]) startAdmin(cmd Command[C]) (stop func(), err error) {
	e.admin = &adminState{err: make(chan error, 1)}
	addr := ""
	if cmd.Listen != nil {
		addr = cmd.Listen(e.Config)
	}
	if addr == "" {
		return func() {}, nil
	}
	srv := admin.New(addr, e.Registry, nil, e.Logger)
	if err := srv.Listen(); err != nil {
		return nil, err
	}
	srv.AddCheck("lifecycle", e.lifecycle)
	e.admin.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.admin.err <- srv.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

func (e *Env[C]) lifecycle(context.Context) error {
	switch e.admin.state.Load() {
	case stateStarting:
		return errors.New("starting")
	case stateStopping:
		return errors.New("shutting down")
	}
	return nil
}

// Handle serves h at pattern on the admin listener (nothing without
// one). Call it before Serve.
func (e *Env[C]) Handle(pattern string, h http.Handler) {
	if e.admin != nil && e.admin.srv != nil {
		e.admin.srv.Handle(pattern, h)
	}
}

// Ready adds a dependency to /readyz.
func (e *Env[C]) Ready(name string, check admin.Check) {
	if e.admin != nil && e.admin.srv != nil {
		e.admin.srv.AddCheck(name, check)
	}
}

// Serve runs r until ctx is done, then gives it shutdown_timeout to
// return.
func (e *Env[C]) Serve(ctx context.Context, r Runner) error {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	e.admin.state.Store(stateRunning)
	defer e.admin.state.Store(stateStopping)
	select {
	case err := <-done:
		return err
	case err := <-e.admin.err:
		cancel()
		<-done
		return err
	case <-ctx.Done():
	}
	e.admin.state.Store(stateStopping)
	e.Logger.Info("shutting down", "deadline", e.Config.Common().ShutdownTimeout)
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(e.Config.Common().ShutdownTimeout):
		return fmt.Errorf("did not stop within shutdown_timeout %s", e.Config.Common().ShutdownTimeout)
	}
}
