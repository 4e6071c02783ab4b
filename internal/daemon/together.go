package daemon

import (
	"context"
	"errors"
)

// Together runs several parts of one daemon as one: all start at once,
// the first to fail stops the others, and Run returns when all have.
// A part that returns nil early (its work done) leaves the others running.
func Together(parts ...Runner) Runner { return together(parts) }

type together []Runner

func (t together) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(t))
	for _, r := range t {
		go func() {
			err := r.Run(ctx)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var all []error
	for range t {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}
