package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
)

// The worker tests publish notification jobs straight to the jobs stream,
// as the sweeper does, and run `worker run` processes against them. What
// the SMTP server received is the evidence: each mail names its crossing
// in its body and its page in its Subject, and the server recorded when
// each send began (MAIL FROM) and when it was accepted (reply to DATA).

const workerSite = "example.com"

// jobsClient is the test's own connection, publishing as the sweeper does.
type jobsClient struct {
	bus    *bus.Bus
	stream jetstream.Stream
}

func (b *bundle) jobsClient(t *testing.T) *jobsClient {
	t.Helper()
	cfg := bus.DefaultConfig()
	cfg.URL = b.natsURL()
	cfg.Replicas = b.natsReplicas()
	cfg.User, cfg.Password = b.natsUser, secret.New(b.natsPassword)
	bb, err := bus.Connect(context.Background(), cfg, "e2e jobs publisher",
		slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bb.Close)
	s, err := bb.JobsStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &jobsClient{bus: bb, stream: s}
}

// publish enqueues x with its key as Nats-Msg-Id, as the sweeper does.
func (c *jobsClient) publish(t *testing.T, x crossing.Crossing) {
	t.Helper()
	if err := c.tryPublish(x); err != nil {
		t.Fatal(err)
	}
}

func (c *jobsClient) tryPublish(x crossing.Crossing) error {
	body, err := x.Marshal()
	if err != nil {
		return err
	}
	m := nats.NewMsg(c.bus.JobsSubject(bus.Key(x.Site, x.Path)))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, x.Key)
	if _, err := c.bus.JS.PublishMsg(context.Background(), m); err != nil {
		return fmt.Errorf("publish %s: %w", x.Key, err)
	}
	return nil
}

// pending is how many jobs the stream still holds (work queue: acked and
// terminated jobs are gone).
func (c *jobsClient) pending(t *testing.T) uint64 {
	t.Helper()
	var n uint64
	retryNATS(t, "jobs stream info", func(ctx context.Context) error {
		info, err := c.stream.Info(ctx)
		if err == nil {
			n = info.State.Msgs
		}
		return err
	})
	return n
}

// ledgerSize is how many crossings the sent ledger holds.
func (c *jobsClient) ledgerSize(t *testing.T) int {
	t.Helper()
	n := 0
	retryNATS(t, "sent ledger", func(ctx context.Context) error {
		kv, err := c.bus.KV(ctx, bus.BucketSent, 0) // as the workers open it
		if err != nil {
			return err
		}
		keys, err := kv.ListKeys(ctx)
		if err != nil {
			return err
		}
		n = 0
		for range keys.Keys() {
			n++
		}
		return nil
	})
	return n
}

// retryNATS asks until an answer comes, for up to 30 s: a cluster that
// lost a node may take seconds to elect a stream's leader again, and a
// question asked meanwhile goes unanswered. The answer itself is exact.
func retryNATS(t *testing.T, what string, ask func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := ask(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v (asked for 30 s)", what, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func workerPath(page int) string { return fmt.Sprintf("/page/%02d", page) }

// workerJob is crossing i of page, with a key shaped like the sweeper's
// (rule.page-hash.episode).
func workerJob(page, i int) crossing.Crossing {
	path := workerPath(page)
	return crossing.Crossing{
		Key:  fmt.Sprintf("e2e-rule.%s.%d", bus.Key(workerSite, path), i),
		Rule: "e2e-rule", Site: workerSite, Path: path, Window: "1h",
		Threshold: 1000, Count: uint64(1000 + i), CrossedAt: time.Now().UTC(),
		Recipients: []string{"ops@example.com"},
	}
}

// received is one mail as the SMTP server saw it.
type received struct {
	key       string // from the body: "Sent by pagewatch for crossing KEY."
	page      string // from the Subject
	messageID string // the Message-ID header, without angle brackets
	began     time.Time
	accepted  time.Time
}

var crossingLine = regexp.MustCompile(`Sent by pagewatch for crossing (\S+)\.\r?\n`)

// parseMails reads the crossing key, page and Message-ID of every message.
func parseMails(t *testing.T, msgs []smtptest.Message) []received {
	t.Helper()
	out := make([]received, 0, len(msgs))
	for i, m := range msgs {
		r, err := parseMail(m)
		if err != nil {
			t.Fatalf("message %d: %v\n%s", i, err, m.Data)
		}
		out = append(out, r)
	}
	return out
}

func parseMail(m smtptest.Message) (received, error) {
	r := received{began: m.Began, accepted: m.Accepted}
	msg, err := netmail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return r, err
	}
	r.messageID = strings.Trim(strings.TrimSpace(msg.Header.Get("Message-Id")), "<>")
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return r, fmt.Errorf("subject: %w", err)
	}
	page, ok := strings.CutPrefix(subject, "[pagewatch] ")
	if ok {
		page, _, ok = strings.Cut(page, " passed ")
	}
	if !ok {
		return r, fmt.Errorf("subject %q names no page", subject)
	}
	r.page = page
	text, err := plainText(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	if err != nil {
		return r, err
	}
	sm := crossingLine.FindSubmatch(text)
	if sm == nil {
		return r, fmt.Errorf("no crossing key in the text part")
	}
	r.key = string(sm[1])
	return r, nil
}

// plainText finds the text/plain part, decoded.
func plainText(contentType, encoding string, body io.Reader) ([]byte, error) {
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("content type %q: %w", contentType, err)
	}
	if strings.HasPrefix(media, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return nil, fmt.Errorf("no text/plain part")
			}
			if err != nil {
				return nil, err
			}
			// NextPart decodes quoted-printable itself and hides the header.
			if text, err := plainText(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p); err == nil {
				return text, nil
			}
		}
	}
	if media != "text/plain" {
		return nil, fmt.Errorf("%s is not text/plain", media)
	}
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	}
	return io.ReadAll(body)
}

// mailStats checks what every workers test requires of the mails: each
// names a published crossing, is about that crossing's page and carries
// the Message-ID derived from its key; and it counts copies per crossing.
type mailStats struct {
	copies     map[string]int // crossing key → mails
	duplicates int            // mails beyond the first per crossing
	missing    []string       // published crossings never mailed
}

func checkMails(t *testing.T, mails []received, jobs map[string]crossing.Crossing) mailStats {
	t.Helper()
	st := mailStats{copies: map[string]int{}}
	idCopies := map[string]int{}
	for _, r := range mails {
		x, ok := jobs[r.key]
		if !ok {
			t.Errorf("mail for crossing %q, which was never published", r.key)
			continue
		}
		if r.page != x.Path {
			t.Errorf("mail for crossing %s is about page %q, want %q", r.key, r.page, x.Path)
		}
		if want := crossing.MessageID(r.key); r.messageID != want {
			t.Errorf("mail for crossing %s has Message-ID %q, want %q", r.key, r.messageID, want)
		}
		st.copies[r.key]++
		idCopies[r.messageID]++
	}
	for key := range jobs {
		if st.copies[key] == 0 {
			st.missing = append(st.missing, key)
		}
	}
	sort.Strings(st.missing)
	for _, n := range idCopies {
		st.duplicates += n - 1
	}
	return st
}

// overlap is two sends of one page that the SMTP server had in hand at
// the same time.
type overlap struct {
	page string
	a, b received
}

func (o overlap) String() string {
	return fmt.Sprintf("page %s: %s [%s, %s] and %s [%s, %s]", o.page,
		o.a.key, o.a.began.Format("15:04:05.000"), o.a.accepted.Format("15:04:05.000"),
		o.b.key, o.b.began.Format("15:04:05.000"), o.b.accepted.Format("15:04:05.000"))
}

// overlaps lists every send of a page that began before an earlier send
// of the same page was accepted.
func overlaps(mails []received) []overlap {
	byPage := map[string][]received{}
	for _, r := range mails {
		byPage[r.page] = append(byPage[r.page], r)
	}
	var out []overlap
	for page, rs := range byPage {
		sort.Slice(rs, func(i, j int) bool { return rs[i].began.Before(rs[j].began) })
		last := rs[0] // the send accepted latest so far
		for _, r := range rs[1:] {
			if r.began.Before(last.accepted) {
				out = append(out, overlap{page, last, r})
			}
			if r.accepted.After(last.accepted) {
				last = r
			}
		}
	}
	return out
}

// maxInFlight is the most sends the SMTP server had in hand at once,
// whatever their page: proof that the workers did send concurrently.
func maxInFlight(mails []received) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(mails))
	for _, r := range mails {
		edges = append(edges, edge{r.began, 1}, edge{r.accepted, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta
		}
		return edges[i].at.Before(edges[j].at)
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// waitJobsDone waits until every published crossing was mailed and the
// jobs stream is empty, then returns the mails.
func (b *bundle) waitJobsDone(t *testing.T, c *jobsClient, jobs map[string]crossing.Crossing, timeout time.Duration) []received {
	t.Helper()
	testcheck.Eventually(t, timeout, fmt.Sprintf("all %d crossings mailed and the jobs stream empty", len(jobs)), func() error {
		msgs := b.smtp.Messages()
		if len(msgs) < len(jobs) {
			return fmt.Errorf("%d mails, %d jobs left in the stream", len(msgs), c.pending(t))
		}
		// Every crossing may be mailed once there are enough mails: parse
		// them only then (checkMails reports mails for unknown crossings).
		if pending := c.pending(t); pending != 0 {
			return fmt.Errorf("%d mails, %d jobs left in the stream", len(msgs), pending)
		}
		if st := checkMails(t, parseMails(t, msgs), jobs); len(st.missing) != 0 {
			return fmt.Errorf("%d mails, %d of %d crossings never mailed (e.g. %v)", len(msgs), len(st.missing), len(jobs), st.missing[:min(3, len(st.missing))])
		}
		return nil
	})
	// Nothing is left to send; let a send of a killed worker that the
	// server still had in hand land.
	time.Sleep(500 * time.Millisecond)
	return parseMails(t, b.smtp.Messages())
}

// startWorkers starts n `worker run` processes one after another, each
// once it serves its admin endpoints (after it set up the jobs stream and
// its consumer). Starting them all at once has the embedded nats-server
// update the jobs stream and create the consumer concurrently, which its
// own code does not synchronise (a data race -race reports in
// nats-server's fileStore, not in pagewatch).
func (b *bundle) startWorkers(t *testing.T, n int) ([]*proc, []string) {
	t.Helper()
	procs, addrs := make([]*proc, n), make([]string, n)
	for i := range procs {
		procs[i] = b.start(t, "worker", "run")
		addrs[i] = procs[i].adminAddr(t)
	}
	return procs, addrs
}

// workerMetric sums an unlabelled metric over the workers' admin addresses.
func workerMetric(t *testing.T, addrs []string, name string) float64 {
	t.Helper()
	var n float64
	for _, a := range addrs {
		n += metric(t, a, name)
	}
	return n
}

// waitOutcome waits until the notifications history holds want rows of
// outcome and returns the history by outcome.
func (b *bundle) waitOutcome(t *testing.T, outcome string, want int, timeout time.Duration) string {
	t.Helper()
	testcheck.Eventually(t, timeout, fmt.Sprintf("%d %q rows in the notifications history", want, outcome), func() error {
		got := b.ch.Query(t, fmt.Sprintf("SELECT count() FROM pagewatch.notifications WHERE outcome = '%s'", outcome))
		if strings.TrimSpace(got) != strconv.Itoa(want) {
			return fmt.Errorf("notifications history holds %s %q rows", strings.TrimSpace(got), outcome)
		}
		return nil
	})
	rows := strings.TrimSpace(b.ch.Query(t, "SELECT outcome, count() FROM pagewatch.notifications GROUP BY outcome ORDER BY outcome"))
	return strings.NewReplacer("\t", " ", "\n", ", ").Replace(rows)
}
