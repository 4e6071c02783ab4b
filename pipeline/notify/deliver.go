package notify

// Delivery: a job's crossing goes to each receiver the routing names,
// one after another. handle is the job's path; deliverySteps is each
// receiver's, read top to bottom:
//
//	silenced? → route → for each receiver: receiver known → ledger →
//	quiet hours → describe → unsubscribed (email) → rate limits →
//	claim → send → record → ack once every receiver is done
//
// A receiver that fails does not stop the others: the job is acked once
// every receiver is done (sent, dead-lettered, held or recorded), and
// otherwise comes back after the shortest wait any receiver asked for;
// the ledger keeps the receivers that were done from a second delivery.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// DefaultReceiver is the receiver of a config that names none: email to
// each rule's recipients. It keeps the sent-ledger keys of versions
// before receivers existed, so an upgrade mails nothing twice.
const DefaultReceiver = ledger.BareReceiver

// LedgerKey is the sent-ledger key of (crossing, receiver).
func LedgerKey(crossingKey, receiver string) string { return ledger.Key(crossingKey, receiver) }

// delivery is one crossing on its way to one receiver: what the steps
// read, and what they learn for the steps after them.
type delivery struct {
	msg  jetstream.Msg
	x    crossing.Crossing
	name string // the receiver's name, as routed
	spec ReceiverSpec
	r    Receiver
	key  string // the ledger key
	log  *slog.Logger

	// job is shared by the job's deliveries: its description is made once,
	// for the first receiver that sends.
	job *jobNotes
	// n is what goes to this receiver: the job's, with its recipients.
	n Notification
	// gone are the recipients left out as unsubscribed, recorded once the
	// delivery is done.
	gone []string
	// takeOver is the revision of a claim to take over (whose: "own" or
	// "expired", for the metric; claimer: the expired claim).
	takeOver uint64
	whose    string
	claimer  ledger.Entry
	claim    heldClaim // this worker's claim, once made
}

// jobNotes are what one job's deliveries share.
type jobNotes struct {
	described *Notification
}

// verdict is what a step decided: go on to the next step, or stop with
// the delivery done, or stop and come back after wait.
type verdict struct {
	stop bool
	done bool
	wait time.Duration
}

var proceed = verdict{}

// finished: nothing is left to do for this receiver.
func finished() verdict { return verdict{stop: true, done: true} }

// later: stop here, and come back after wait.
func later(wait time.Duration) verdict { return verdict{stop: true, wait: wait} }

// step is one step of a delivery.
type step func(ctx context.Context, d *delivery) verdict

// deliverySteps is the path of one delivery, in order: each step in a
// file of its own (step_*.go).
func (w *Worker) deliverySteps() []step {
	return []step{
		w.stepReceiver,     // the routed receiver exists here
		w.stepLedger,       // step_ledger.go: skip what was done, or take a claim over
		w.stepQuiet,        // step_quiet.go: hold or record during quiet hours
		w.stepDescribe,     // the job's notification, described once
		w.stepUnsubscribed, // step_unsubscribed.go: email leaves out who unsubscribed
		w.stepLimit,        // step_limit.go: wait for the rate limits' slots
		w.stepClaim,        // step_claim.go: claim the delivery in the ledger
		w.stepSend,         // step_send.go: send; retry or dead-letter a failure
		w.stepRecord,       // step_record.go: the ledger says sent
	}
}

// runnerReceivers are one runner's open receivers, by name.
type runnerReceivers map[string]Receiver

func (w *Worker) openReceivers() (runnerReceivers, error) {
	out := runnerReceivers{}
	for _, s := range w.specs {
		r, err := s.Open()
		if err != nil {
			closeReceivers(out)
			return nil, fmt.Errorf("open receiver %s: %w", s.Name, err)
		}
		out[s.Name] = r
	}
	return out, nil
}

func closeReceivers(rs runnerReceivers) {
	for _, r := range rs {
		if c, ok := r.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

// handle runs one job of a locked page: a silence stops it whole;
// otherwise each routed receiver gets its delivery.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, rs runnerReceivers) {
	if s, ok := w.silences.Match(x, w.now()); ok {
		w.ack(msg, x)
		w.out.outcome(x, "", crossing.Record{Outcome: crossing.Silenced, Error: "silence " + s.ID})
		return
	}
	var (
		job     jobNotes
		soonest time.Duration
		pending bool
	)
	for _, name := range w.cfg.Routing.Route(x) {
		d := &delivery{msg: msg, x: x, name: name, r: rs[name], key: LedgerKey(x.Key, name),
			log: w.logger.With("key", x.Key, "receiver", name), job: &job}
		d.spec = w.spec[name]
		if v := w.deliver(ctx, d); !v.done {
			if !pending || v.wait < soonest {
				soonest = v.wait
			}
			pending = true
		}
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		_ = msg.Nak() // shutting down, or the lease was lost
		return
	}
	if pending {
		_ = msg.NakWithDelay(soonest)
		return
	}
	w.ack(msg, x)
}

// deliver runs a delivery through its steps until one stops it.
func (w *Worker) deliver(ctx context.Context, d *delivery) verdict {
	for _, s := range w.steps {
		if v := s(ctx, d); v.stop {
			return v
		}
	}
	return finished()
}

// stepReceiver dead-letters a delivery to a receiver this worker does
// not have: a rule named it.
func (w *Worker) stepReceiver(ctx context.Context, d *delivery) verdict {
	if _, ok := w.spec[d.name]; ok && d.r != nil {
		return proceed
	}
	return w.deadLetter(ctx, d, crossing.Record{Outcome: crossing.Failed, Error: fmt.Sprintf("no receiver named %q", d.name)})
}

// stepDescribe describes the job's crossing (once per job: the chart and
// referrers are read from ClickHouse) and addresses it for this receiver.
func (w *Worker) stepDescribe(ctx context.Context, d *delivery) verdict {
	if d.job.described == nil {
		n := w.describe(ctx, d.x)
		d.job.described = &n
	}
	d.n = *d.job.described
	if len(d.spec.To) > 0 {
		d.n.Recipients = d.spec.To
	}
	return proceed
}

func (w *Worker) ack(msg jetstream.Msg, x crossing.Crossing) {
	// Not DoubleAck: the ledger already holds every delivery, so an ack
	// lost on the way ends as duplicates on redelivery, never a second
	// send, and waiting for the server's confirmation would slow each job.
	if err := msg.Ack(); err != nil {
		w.logger.Warn("ack failed", "key", x.Key, "err", err)
	}
}
