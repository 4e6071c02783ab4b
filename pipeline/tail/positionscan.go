package tail

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// recordedFile is a file the input's subject holds messages of, and the
// furthest end published for it.
type recordedFile struct {
	id  identity
	end int64
}

// scanWait bounds the wait for each message of a scan; the messages are
// stored already, so a longer wait means the server is in trouble.
const scanWait = 30 * time.Second

// recordedFiles lists every file identity on the position's subject. It reads
// the messages' headers only, through an ordered consumer: a subject holds
// up to nats.hits_max_age of batches of up to batch_bytes each, which
// GetMsg would fetch whole, one round trip per message
// (BenchmarkScanRecorded compares the two).
func (p *position) recordedFiles(ctx context.Context) ([]recordedFile, error) {
	last, err := p.last(ctx)
	if err != nil || last == nil {
		return nil, err
	}
	cons, err := p.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{p.subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		HeadersOnly:    true,
		// Removed below; this is for a scan that dies with its process.
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", p.subject, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", p.subject, err)
	}
	defer func() {
		it.Stop()
		// Without this every scan leaves a consumer on the server until
		// its inactivity threshold; a backfill scans every input.
		if info := cons.CachedInfo(); info != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = p.stream.DeleteConsumer(dctx, info.Name)
			cancel()
		}
	}()
	ends := map[identity]int64{}
	for {
		mctx, cancel := context.WithTimeout(ctx, scanWait)
		msg, err := it.Next(jetstream.NextContext(mctx))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", p.subject, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", p.subject, err)
		}
		// A message that is not ours (no position headers) names no file.
		if id, end, err := parsePosition(msg.Headers()); err == nil {
			ends[id] = max(ends[id], end)
		}
		if meta.Sequence.Stream >= last.seq || meta.NumPending == 0 {
			break
		}
	}
	out := make([]recordedFile, 0, len(ends))
	for id, end := range ends {
		out = append(out, recordedFile{id: id, end: end})
	}
	return out, nil
}
