package notify

import (
	"context"
	"log/slog"
	"time"

	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// Recorder keeps the notifications history.
type Recorder interface {
	RecordNotifications(ctx context.Context, rs []crossing.Record) error
}

// history writes outcomes to the Recorder in batches, off the send path:
// one ClickHouse insert per job would cost more than the send itself.
// The history is a record, not a guarantee; what makes a crossing mailed
// once is the sent ledger, written before the ack.
type history struct {
	rec    Recorder
	logger *slog.Logger
	in     chan crossing.Record
	done   chan struct{}
}

const (
	historyBatch = 1000
	historyEvery = 500 * time.Millisecond
)

func newHistory(rec Recorder, logger *slog.Logger) *history {
	return &history{rec: rec, logger: logger, in: make(chan crossing.Record, 10*historyBatch), done: make(chan struct{})}
}

// add queues an outcome; it blocks only when ClickHouse has fallen far
// behind, which slows the worker rather than losing history.
func (h *history) add(r crossing.Record) { h.in <- r }

// close writes what is queued and stops.
func (h *history) close() {
	close(h.in)
	<-h.done
}

// run writes batches until close; the worker's Run runs it.
func (h *history) run() {
	defer close(h.done)
	var batch []crossing.Record
	t := time.NewTicker(historyEvery)
	defer t.Stop()
	for {
		select {
		case r, ok := <-h.in:
			if !ok {
				h.write(batch)
				return
			}
			batch = append(batch, r)
			if len(batch) < historyBatch {
				continue
			}
		case <-t.C:
		}
		h.write(batch)
		batch = batch[:0]
	}
}

func (h *history) write(batch []crossing.Record) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = h.rec.RecordNotifications(ctx, batch); err == nil {
			return
		}
		_ = retry.Sleep(ctx, retry.Delay(attempt, 200*time.Millisecond, 5*time.Second))
	}
	h.logger.Warn("notification history lost", "records", len(batch), "err", err)
}

// outcomes counts and records what happened to jobs and deliveries.
type outcomes struct {
	hist    *history
	metrics *metrics
	worker  string // this process's name in the history
}

// outcome counts and records what happened to one delivery (receiver
// "") or to the whole job.
func (o *outcomes) outcome(x crossing.Crossing, receiver string, rec crossing.Record) {
	o.metrics.jobs.WithLabelValues(string(rec.Outcome)).Inc()
	if receiver != "" {
		o.metrics.deliveries.WithLabelValues(receiver, string(rec.Outcome)).Inc()
	}
	rec.Receiver = receiver
	o.record(x, rec)
}

// record queues an outcome for the history; it never fails the job.
func (o *outcomes) record(x crossing.Crossing, rec crossing.Record) {
	rec.At, rec.Crossing, rec.Worker = time.Now(), x, o.worker
	o.hist.add(rec)
}
