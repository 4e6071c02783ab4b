package notify

// Delivery: a job's crossing goes to each receiver the routing names,
// one after another, each through its own steps:
//
//	skip if the (crossing, receiver) ledger has it → quiet hours →
//	wait for the receiver's rate limits → send → write the ledger
//
// A receiver that fails does not stop the others: the job is acked once
// every receiver is done (sent, dead-lettered, held or recorded), and
// otherwise comes back after the shortest wait any receiver asked for;
// the ledger keeps the receivers that were done from a second delivery.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// ledger states: what a ledger entry says was done for (crossing, receiver).
const (
	stateSent = "sent"
	stateDead = "dead_lettered"
	// stateSending is a worker's claim on a delivery, made by a
	// compare-and-set just before it sends and replaced by the result.
	stateSending = "sending"
	stateHeld    = "held"
	stateQuiet   = "quiet"
	// stateUnsubscribed: every recipient had unsubscribed from the rule.
	stateUnsubscribed = "unsubscribed"
)

type ledgerEntry struct {
	At        time.Time `json:"at"`
	Worker    string    `json:"worker"`
	MessageID string    `json:"message_id,omitempty"`
	// State is "" for entries of versions before receivers (sent).
	State string `json:"state,omitempty"`
}

// LedgerKey is the sent-ledger key of (crossing, receiver). The default
// receiver keeps the bare crossing key of earlier versions.
func LedgerKey(crossingKey, receiver string) string {
	if receiver == DefaultReceiver {
		return crossingKey
	}
	return crossingKey + ".to." + receiver
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

// handle runs one job of a locked page through its steps.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, rs runnerReceivers) {
	if s, ok := w.silences.Match(x, w.now()); ok {
		w.ack(msg, x)
		w.outcome(x, "", crossing.Record{Outcome: crossing.Silenced, Error: "silence " + s.ID})
		return
	}
	var (
		n       *Notification // described once, for the first receiver that sends
		waitMin time.Duration
		pending bool
	)
	for _, name := range w.cfg.Routing.Route(x) {
		wait, done := w.deliver(ctx, msg, x, name, rs, &n)
		if !done {
			if !pending || wait < waitMin {
				waitMin = wait
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
		_ = msg.NakWithDelay(waitMin)
		return
	}
	w.ack(msg, x)
}

// deliver takes the crossing to one receiver. done reports that nothing
// is left to do for it; otherwise wait is when to try again.
func (w *Worker) deliver(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, name string, rs runnerReceivers, n **Notification) (wait time.Duration, done bool) {
	log := w.logger.With("key", x.Key, "receiver", name)
	spec, ok := w.spec[name]
	r := rs[name]
	if !ok || r == nil {
		// A rule named a receiver this worker does not have.
		return w.deadLetter(ctx, msg, x, name, crossing.Record{Outcome: crossing.Failed, Error: fmt.Sprintf("no receiver named %q", name)})
	}

	// Step: skip what the ledger has, as its leader has it: a replica
	// behind would say "not sent" of what was sent (bus.LeaderGet).
	key := LedgerKey(x.Key, name)
	var (
		takeOver uint64 // the revision of a claim to take over
		whose    string // own or expired: which claim, for the metric
		claimer  ledgerEntry
	)
	v, rev, found, err := w.bus.LeaderGet(ctx, bus.BucketSent, key)
	if err != nil {
		log.Warn("read sent ledger failed; job will be redelivered", "err", err)
		return w.cfg.DeferDelay, false
	}
	var le ledgerEntry
	if found {
		_ = json.Unmarshal(v, &le)
	}
	switch {
	case found && le.State != stateSending:
		// Done, here or by another worker.
		w.unsentClaims.Delete(key)
		w.unrecorded.Delete(key)
		if le.State == "" || le.State == stateSent {
			w.outcome(x, name, crossing.Record{Outcome: crossing.Duplicate})
		}
		return 0, true
	case w.isUnrecorded(key):
		// Step: record a send whose ledger write failed here before
		// (its claim still there, or gone too).
		return w.recordSentBefore(ctx, x, name, key)
	case !found:
		// Nothing in the ledger: claimed afresh below.
	case w.ownUnsentClaim(key, le):
		// This process's claim, whose write it could not confirm and
		// after which it sent nothing.
		takeOver, whose = rev, "own"
	case w.now().Sub(le.At) < w.cfg.claimTimeout():
		// Another worker is sending it, or has and is still trying to
		// record it.
		return w.cfg.DeferDelay, false
	default:
		// Its claimer died between the claim and the result, or has not
		// reached the ledger for claim_timeout: whether the mail went out
		// is unknown, and it is sent (the exception of docs/design.md),
		// once: the claim is taken over by a compare-and-set.
		takeOver, whose, claimer = rev, "expired", le
	}

	// Step: quiet hours.
	if spec.Quiet.Enabled() && spec.Quiet.In(w.now()) {
		return w.quiet(ctx, x, spec)
	}

	// Step: describe (once per job), then wait for the limits' slots,
	// claimed last so they are used at once.
	if *n == nil {
		d := w.describe(ctx, x)
		*n = &d
	}
	nn := **n
	if len(spec.To) > 0 {
		nn.Recipients = spec.To
	}
	var gone []string // recorded once sent
	if spec.Kind == KindEmail {
		// Step: leave out who unsubscribed from the rule; add links.
		var (
			wait     time.Duration
			done, ok bool
		)
		if gone, wait, done, ok = w.unsubscribed(ctx, x, name, &nn); !ok {
			return wait, done
		}
	}
	if wait, ok := w.awaitSlot(ctx, x, spec, nn.Recipients); !ok {
		return wait, false
	}

	// Step: claim it, by a compare-and-set that the bucket's leader
	// orders: of two workers that both found nothing in the ledger (one
	// read an answer that was behind, or a job went to both), one sends.
	claim, err := w.claim(ctx, key, takeOver)
	if err != nil {
		log.Warn("delivery claimed by another worker, or the claim failed; job will be redelivered", "err", err)
		return w.cfg.DeferDelay, false
	}
	if takeOver != 0 {
		w.metrics.takeovers.WithLabelValues(whose).Inc()
		if whose == "expired" {
			log.Warn("took over a claim older than claim_timeout: its worker died or was cut off from NATS, and may have sent", "claimed_by", claimer.Worker, "claimed_at", claimer.At)
		}
	}

	// Step: send.
	start := time.Now()
	err = r.Send(ctx, nn)
	w.metrics.sendSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		w.releaseClaim(key, claim)
		return w.sendFailed(ctx, msg, x, spec, err)
	}

	// Step: record it as sent, under the lock, before the ack; for as
	// long as the claim keeps other workers off it, so that a ledger
	// outage shorter than claim_timeout sends nothing twice.
	budget := time.Until(claim.began.Add(w.cfg.claimTimeout() - w.claimMargin()))
	if err := w.writeLedgerFor(ctx, key, stateSent, max(budget, time.Second)); err != nil {
		// It went out. Keep the job unacknowledged: when it comes back to
		// this process the ledger is written, not the mail sent again.
		// Only if it goes to another worker first is it sent twice; a
		// mail's Message-ID makes that repeat recognisable.
		w.unrecorded.Store(key, struct{}{})
		log.Error("sent but the sent ledger write failed", "err", err)
		return w.cfg.DeferDelay, false
	}
	w.outcome(x, name, crossing.Record{Outcome: crossing.Sent})
	w.recordUnsubscribed(x, name, gone)
	log.Info("notification sent", "rule", x.Rule, "recipients", len(nn.Recipients))
	return 0, true
}

// heldClaim is a claim this worker wrote: its revision, its time as
// written (at) and as this process's monotonic clock read it (began).
type heldClaim struct {
	rev   uint64
	at    time.Time
	began time.Time
}

// claim writes this worker's claim on a delivery: a create, or an update
// of a dead worker's claim at its revision. It fails if another worker
// wrote the key first. A write whose result is unknown (a timeout, a
// leader change) is remembered, so that finding it later this worker
// knows nothing was sent under it.
func (w *Worker) claim(ctx context.Context, key string, takeOver uint64) (heldClaim, error) {
	began := time.Now()
	at := w.now().UTC()
	body, _ := json.Marshal(ledgerEntry{At: at, Worker: w.cfg.Name, MessageID: crossing.MessageID(key), State: stateSending})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var (
		rev uint64
		err error
	)
	if takeOver != 0 {
		rev, err = w.sent.Update(ctx, key, body, takeOver)
	} else {
		rev, err = w.sent.Create(ctx, key, body)
	}
	switch {
	case err == nil:
		w.unsentClaims.Delete(key)
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		// Another worker's write came first (R1 and R3 streams say so
		// with different codes). An earlier claim of ours that is
		// unconfirmed stays remembered: it may be the one in the way.
	default:
		w.rememberUnsent(key, at)
	}
	return heldClaim{rev: rev, at: at, began: began}, err
}

// ownUnsentClaim reports whether le is a claim of this process that it
// could not confirm, and so sent nothing under.
func (w *Worker) ownUnsentClaim(key string, le ledgerEntry) bool {
	v, ok := w.unsentClaims.Load(key)
	return ok && le.Worker == w.cfg.Name && slices.ContainsFunc(v.([]time.Time), le.At.Equal)
}

// rememberUnsent adds a claim to the key's claims this process sent
// nothing under. The page's lock keeps one runner on a key at a time.
func (w *Worker) rememberUnsent(key string, at time.Time) {
	var ats []time.Time
	if v, ok := w.unsentClaims.Load(key); ok {
		ats = v.([]time.Time)
	}
	w.unsentClaims.Store(key, append(slices.Clone(ats), at))
}

// claimMargin is kept between the claimer's last ledger write and the
// time another worker may take its claim over: for the clocks of two
// machines, and a write in flight.
func (w *Worker) claimMargin() time.Duration {
	return min(w.cfg.AckWait/4, 15*time.Second)
}

// releaseClaim deletes a claim whose send failed, so that the retry can
// claim again at once. If it cannot, this worker still knows nothing was
// sent under the claim and takes it over when the job comes back here;
// another worker waits for claim_timeout.
func (w *Worker) releaseClaim(key string, c heldClaim) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.sent.Delete(ctx, key, jetstream.LastRevision(c.rev)); err != nil {
		w.rememberUnsent(key, c.at)
		w.logger.Warn("cannot release the claim of a failed send; this worker takes it over on the retry, another waits for claim_timeout", "key", key, "err", err)
	}
}

func (w *Worker) isUnrecorded(key string) bool {
	_, ok := w.unrecorded.Load(key)
	return ok
}

// recordSentBefore writes the ledger of a delivery this process sent but
// could not record.
func (w *Worker) recordSentBefore(ctx context.Context, x crossing.Crossing, name, key string) (time.Duration, bool) {
	if err := w.writeLedger(ctx, key, stateSent); err != nil {
		w.logger.Error("sent before, and the sent ledger write failed again", "key", x.Key, "receiver", name, "err", err)
		return w.cfg.DeferDelay, false
	}
	w.unrecorded.Delete(key)
	w.outcome(x, name, crossing.Record{Outcome: crossing.Sent})
	w.logger.Info("notification sent before; recorded now", "key", x.Key, "receiver", name)
	return 0, true
}

func (w *Worker) sendFailed(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, spec ReceiverSpec, err error) (time.Duration, bool) {
	rec := crossing.Record{Outcome: crossing.Failed, SMTPCode: smtpCode(err), Error: err.Error()}
	w.outcome(x, spec.Name, rec)
	if isPermanent(err) {
		return w.deadLetter(ctx, msg, x, spec.Name, rec)
	}
	attempt := 1
	var queued time.Time
	if meta, err := msg.Metadata(); err == nil {
		attempt, queued = int(meta.NumDelivered), meta.Timestamp
	}
	if !queued.IsZero() && time.Since(queued) > spec.GiveUpAfter { // the server's time, not the quiet hours' clock
		rec.Error = fmt.Sprintf("gave up after %s: %s", spec.GiveUpAfter, rec.Error)
		return w.deadLetter(ctx, msg, x, spec.Name, rec)
	}
	d := retry.Delay(attempt, time.Second, 5*time.Minute)
	if after, ok := retryAfter(err); ok {
		d = max(after, 10*time.Millisecond)
	}
	if !queued.IsZero() {
		// Come back no later than the give-up time, to dead-letter then.
		d = min(d, max(spec.GiveUpAfter-time.Since(queued), 0)+100*time.Millisecond)
	}
	w.logger.Warn("send failed; will retry", "key", x.Key, "receiver", spec.Name, "smtp_code", rec.SMTPCode, "attempt", attempt, "retry_in", d, "err", err)
	return d, false
}

// deadLetter keeps a delivery that failed for good in the dead-letter
// stream with the reason, marks it done in the ledger and records it.
func (w *Worker) deadLetter(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, receiver string, rec crossing.Record) (time.Duration, bool) {
	dl := nats.NewMsg(w.bus.DeadLetterSubject("jobs"))
	dl.Data = msg.Data()
	dl.Header.Set(bus.HeaderDeadReason, rec.Error)
	dl.Header.Set(bus.HeaderDeadSubject, msg.Subject())
	dl.Header.Set(bus.HeaderDeadReceiver, receiver)
	dl.Header.Set(nats.MsgIdHdr, "jobs."+LedgerKey(x.Key, receiver))
	if meta, err := msg.Metadata(); err == nil {
		dl.Header.Set(bus.HeaderDeadSeq, fmt.Sprint(meta.Sequence.Stream))
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := w.bus.JS.PublishMsg(pctx, dl); err != nil {
		w.logger.Error("dead-letter publish failed; the delivery will be retried", "key", x.Key, "receiver", receiver, "err", err)
		return time.Minute, false
	}
	if err := w.writeLedger(ctx, LedgerKey(x.Key, receiver), stateDead); err != nil {
		w.logger.Warn("dead-lettered but the ledger write failed; it may be dead-lettered again", "key", x.Key, "err", err)
	}
	w.logger.Error("delivery failed for good; dead-lettered", "key", x.Key, "receiver", receiver, "smtp_code", rec.SMTPCode, "err", rec.Error)
	rec.Outcome = crossing.DeadLettered
	w.outcome(x, receiver, rec)
	return 0, true
}

func (w *Worker) writeLedger(ctx context.Context, key, state string) error {
	return w.writeLedgerFor(ctx, key, state, w.cfg.AckWait)
}

// writeLedgerFor writes a ledger entry, trying for up to budget.
func (w *Worker) writeLedgerFor(ctx context.Context, key, state string, budget time.Duration) error {
	body, _ := json.Marshal(ledgerEntry{At: w.now().UTC(), Worker: w.cfg.Name, MessageID: crossing.MessageID(key), State: state})
	if key == "" {
		return errors.New("empty ledger key")
	}
	// The delivery is done: the write must not be cut short by a lost
	// lease or a shutdown, or it would be done again. It is tried for
	// the budget (at least ack_wait, a minute by default: long enough
	// for a leader election), each try for 5 s: a request to a frozen
	// or lost bucket leader would otherwise wait out the whole budget.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	// Past drain_timeout at shutdown the process is leaving: it stops
	// trying, and the send stays unrecorded (logged by the caller).
	stop := context.AfterFunc(w.drainOver, cancel)
	defer stop()
	var err error
	for attempt := 0; ctx.Err() == nil; attempt++ {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = w.sent.Put(actx, key, body)
		acancel()
		if err == nil {
			return nil
		}
		_ = retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second))
	}
	return fmt.Errorf("write sent ledger %s: %w", key, err)
}

func (w *Worker) ack(msg jetstream.Msg, x crossing.Crossing) {
	// Not DoubleAck: the ledger already holds every delivery, so an ack
	// lost on the way ends as duplicates on redelivery, never a second
	// send, and waiting for the server's confirmation would slow each job.
	if err := msg.Ack(); err != nil {
		w.logger.Warn("ack failed", "key", x.Key, "err", err)
	}
}

// outcome counts and records what happened to one delivery (receiver
// "") or to the whole job.
func (w *Worker) outcome(x crossing.Crossing, receiver string, rec crossing.Record) {
	w.metrics.jobs.WithLabelValues(string(rec.Outcome)).Inc()
	if receiver != "" {
		w.metrics.deliveries.WithLabelValues(receiver, string(rec.Outcome)).Inc()
	}
	rec.Receiver = receiver
	w.record(x, rec)
}

// quiet is the quiet-hours step: the crossing is held for the digest
// sent when the quiet hours end, or only recorded; either way the ledger
// marks the delivery done.
func (w *Worker) quiet(ctx context.Context, x crossing.Crossing, spec ReceiverSpec) (time.Duration, bool) {
	outcome, state := crossing.Quiet, stateQuiet
	if spec.Quiet.Holds() {
		outcome, state = crossing.Held, stateHeld
		body, err := x.Marshal()
		if err == nil {
			_, err = w.held.Put(ctx, heldKey(spec.Name, x.Key), body)
		}
		if err != nil {
			w.logger.Warn("holding a crossing for the digest failed; job will be redelivered", "key", x.Key, "receiver", spec.Name, "err", err)
			return w.cfg.DeferDelay, false
		}
	}
	if err := w.writeLedger(ctx, LedgerKey(x.Key, spec.Name), state); err != nil {
		return w.cfg.DeferDelay, false
	}
	w.outcome(x, spec.Name, crossing.Record{Outcome: outcome})
	return 0, true
}

// heldKey is a held crossing's key: receiver, then the hashed crossing key.
func heldKey(receiver, crossingKey string) string { return receiver + "." + bus.Key(crossingKey) }
