package notify

// Hand-off: a runner that finds its page locked by another worker process
// offers the page's jobs to that process instead of deferring them. The
// holder takes them only while one of its runners has the page, queues
// them behind the page's other jobs, and runs them under the lease it
// holds, through the same steps (sent ledger first) as its own jobs. It
// acks them by publishing to their JetStream reply subjects, which any
// connection of the account may do.
//
// Nothing depends on the hand-off for correctness: the lease still
// serialises a page's sends and the ledger still stops a second mail. A
// holder that dies leaves the jobs unacknowledged, and AckWait brings them
// back. A job is handed on at most once: one that was handed to us is
// deferred, as before, if we cannot run it.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

const (
	// handoffTimeout bounds the wait for the holder's answer, which it
	// gives as soon as it has queued the jobs.
	handoffTimeout = 500 * time.Millisecond
	// handoffAttempts is how often a runner tries the lock again after a
	// refused hand-off (the holder is letting go of the page) before it
	// defers the page's jobs.
	handoffAttempts = 3
)

// handoffs offers jobs to, and takes jobs from, other worker processes.
type handoffs struct {
	bus    *bus.Bus
	worker string // this process's name: its hand-off subject
	out    *outcomes
	logger *slog.Logger
}

// handoffRequest is the body of a hand-off request: the page and the
// JetStream deliveries of its jobs.
type handoffRequest struct {
	Page string      `json:"page"`
	Jobs []handedJob `json:"jobs"`
}

type handedJob struct {
	Subject string      `json:"subject"`
	Reply   string      `json:"reply"` // $JS.ACK...: where acks for this delivery go
	Header  nats.Header `json:"header,omitempty"`
	Data    []byte      `json:"data"`
}

var (
	handoffYes = []byte("ok")
	handoffNo  = []byte("no")
)

// answer answers hand-off requests from other worker processes.
func (h *handoffs) answer(s *schedule) nats.MsgHandler {
	return func(m *nats.Msg) {
		jobs, page, err := h.decode(m.Data)
		if err != nil {
			h.logger.Warn("refusing malformed hand-off", "err", err)
			_ = m.Respond(handoffNo)
			return
		}
		if !s.addIfRunning(page, jobs) {
			_ = m.Respond(handoffNo)
			return
		}
		_ = m.Respond(handoffYes)
	}
}

func (h *handoffs) decode(body []byte) ([]job, string, error) {
	var req handoffRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, "", fmt.Errorf("decode hand-off: %w", err)
	}
	jobs := make([]job, 0, len(req.Jobs))
	for _, hj := range req.Jobs {
		if _, err := ackTokens(hj.Reply); err != nil {
			return nil, "", err
		}
		x, err := crossing.Unmarshal(hj.Data)
		if err != nil {
			return nil, "", err
		}
		if bus.Key(x.Site, x.Path) != req.Page {
			return nil, "", fmt.Errorf("hand-off for page %s holds a job for another page (%s)", req.Page, x.Key)
		}
		msg := &fwdMsg{nc: h.bus.Conn, subject: hj.Subject, reply: hj.Reply, header: hj.Header, data: hj.Data}
		jobs = append(jobs, job{msg: msg, x: x})
	}
	return jobs, req.Page, nil
}

// offerPage offers the page's jobs to holder, the worker that has the
// page's lease. Jobs that were handed to us stay. It reports whether the
// page has no jobs left for this runner.
func (h *handoffs) offerPage(ctx context.Context, s *schedule, page, holder string) bool {
	if holder == "" || holder == h.worker {
		// Unknown, or a lease of an earlier run of this worker (a restart
		// under a fixed name): nobody to hand to.
		return false
	}
	var mine, handed []job
	for _, j := range s.takeAll(page) {
		if _, ok := j.msg.(*fwdMsg); ok {
			handed = append(handed, j)
		} else {
			mine = append(mine, j)
		}
	}
	if len(mine) == 0 || !h.offer(ctx, page, holder, mine) {
		s.putBack(page, append(mine, handed...))
		return false
	}
	s.putBack(page, handed)
	for _, j := range mine {
		h.out.metrics.jobs.WithLabelValues(string(crossing.HandedOff)).Inc()
		h.out.record(j.x, crossing.Record{Outcome: crossing.HandedOff})
	}
	return len(handed) == 0
}

// offer sends one hand-off request and reports whether holder took the jobs.
func (h *handoffs) offer(ctx context.Context, page, holder string, jobs []job) bool {
	req := handoffRequest{Page: page, Jobs: make([]handedJob, len(jobs))}
	for i, j := range jobs {
		req.Jobs[i] = handedJob{Subject: j.msg.Subject(), Reply: j.msg.Reply(), Header: j.msg.Headers(), Data: j.msg.Data()}
	}
	body, err := json.Marshal(req)
	if err != nil || int64(len(body)) > h.bus.Conn.MaxPayload() {
		return false // too many jobs for one request: defer them as before
	}
	rctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	// No responders (a worker without hand-off, or gone), a timeout or a
	// refusal all mean: not taken. A timeout can hide a "yes" that was
	// lost; the job is then in two places, and the lease and the ledger
	// keep it to one mail, as with any redelivery.
	resp, err := h.bus.Conn.RequestWithContext(rctx, h.bus.HandoffSubject(holder), body)
	return err == nil && string(resp.Data) == string(handoffYes)
}

// fwdMsg is a JetStream delivery made to another worker process and
// handed to this one. Acks are published to its reply subject, as
// jetstream's own Msg does (nats.go jetstream/message.go).
type fwdMsg struct {
	nc             *nats.Conn
	subject, reply string
	header         nats.Header
	data           []byte

	mu   sync.Mutex
	ackd bool
}

var _ jetstream.Msg = (*fwdMsg)(nil)

// The bodies of the JetStream ack protocol.
const (
	ackAck      = "+ACK"
	ackNak      = "-NAK"
	ackProgress = "+WPI"
	ackTerm     = "+TERM"
)

func (f *fwdMsg) Data() []byte         { return f.data }
func (f *fwdMsg) Headers() nats.Header { return f.header }
func (f *fwdMsg) Subject() string      { return f.subject }
func (f *fwdMsg) Reply() string        { return f.reply }

func (f *fwdMsg) Ack() error        { return f.ack(context.Background(), ackAck, false) }
func (f *fwdMsg) Nak() error        { return f.ack(context.Background(), ackNak, false) }
func (f *fwdMsg) InProgress() error { return f.ack(context.Background(), ackProgress, false) }
func (f *fwdMsg) Term() error       { return f.ack(context.Background(), ackTerm, false) }

func (f *fwdMsg) DoubleAck(ctx context.Context) error { return f.ack(ctx, ackAck, true) }

func (f *fwdMsg) NakWithDelay(d time.Duration) error {
	if d <= 0 {
		return f.Nak()
	}
	return f.ack(context.Background(), fmt.Sprintf(`%s {"delay": %d}`, ackNak, d.Nanoseconds()), false)
}

func (f *fwdMsg) TermWithReason(reason string) error {
	if reason == "" {
		return f.Term()
	}
	return f.ack(context.Background(), ackTerm+" "+reason, false)
}

// ack sends one ack body; like jetstream's Msg, only progress may follow
// another ack.
func (f *fwdMsg) ack(ctx context.Context, body string, sync bool) error {
	if f.reply == "" {
		return jetstream.ErrMsgNoReply
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ackd {
		return jetstream.ErrMsgAlreadyAckd
	}
	var err error
	if sync {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 5*time.Second) // jetstream's default API timeout
			defer cancel()
		}
		_, err = f.nc.RequestWithContext(ctx, f.reply, []byte(body))
	} else {
		err = f.nc.Publish(f.reply, []byte(body))
	}
	if err != nil {
		return err
	}
	if body != ackProgress {
		f.ackd = true
	}
	return nil
}

// Metadata parses the reply subject, as jetstream's Msg does.
func (f *fwdMsg) Metadata() (*jetstream.MsgMetadata, error) {
	t, err := ackTokens(f.reply)
	if err != nil {
		return nil, err
	}
	m := &jetstream.MsgMetadata{
		Domain:       t[ackDomain],
		Stream:       t[ackStream],
		Consumer:     t[ackConsumer],
		NumDelivered: parseNum(t[ackDelivered]),
		NumPending:   parseNum(t[ackPending]),
		Timestamp:    time.Unix(0, int64(parseNum(t[ackTimestamp]))),
	}
	m.Sequence.Stream = parseNum(t[ackStreamSeq])
	m.Sequence.Consumer = parseNum(t[ackConsumerSeq])
	return m, nil
}

// Token positions in a JetStream ack subject, in its newer form:
//
//	$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>[.<random>]
//
// The older form has 9 tokens, without domain and account hash:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>
//
// nats.go parses them in an internal package; this follows its rules.
const (
	ackDomain = iota + 2
	ackAccountHash
	ackStream
	ackConsumer
	ackDelivered
	ackStreamSeq
	ackConsumerSeq
	ackTimestamp
	ackPending
)

// ackTokens splits an ack subject into the newer form's tokens (domain
// and account hash empty for the older form; domain "_" means none).
func ackTokens(reply string) ([ackPending + 1]string, error) {
	var t [ackPending + 1]string
	n := strings.Count(reply, ".") + 1
	// 9 tokens, or at least 11: the 12th is not to be relied on.
	if !strings.HasPrefix(reply, "$JS.ACK.") || n < 9 || (n > 9 && n < 11) {
		return t, fmt.Errorf("%w: not a JetStream ack subject: %q", jetstream.ErrNotJSMessage, reply)
	}
	rest := reply
	for i := range t {
		if n == 9 && (i == ackDomain || i == ackAccountHash) {
			continue
		}
		t[i], rest, _ = strings.Cut(rest, ".")
	}
	if t[ackDomain] == "_" {
		t[ackDomain] = ""
	}
	return t, nil
}

// parseNum reads a decimal; anything else is 0, as in nats.go.
func parseNum(s string) uint64 {
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}
