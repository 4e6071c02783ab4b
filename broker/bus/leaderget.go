package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// leaderGetTimeout bounds one LeaderGet.
const leaderGetTimeout = 5 * time.Second

// LeaderGet reads a key of one of pagewatch's buckets (name as given to KV)
// as the bucket's stream leader has it, with its revision (for a
// compare-and-set); found is false for a key never written, deleted or
// purged.
//
// A KeyValue's Get is a direct get, which any replica may answer, and a
// replica that is behind (just restarted, or cut off for a while) answers
// with what it has: a write acknowledged a moment ago may be missing
// (nats-server offers no read-your-writes on direct gets; NATS's docs say
// to ask the leader where that matters). The sent ledger is such a place:
// a stale "not sent" mails a crossing twice. The message-get API is
// answered by the leader only.
func (b *Bus) LeaderGet(ctx context.Context, name, key string) (value []byte, revision uint64, found bool, err error) {
	bucket := b.BucketName(name)
	// A request the cluster drops (no leader for the moment, or one just
	// lost) gets no answer at all: without a bound it would wait for as
	// long as ctx, which may be forever. 5 s is jetstream's own default.
	ctx, cancel := context.WithTimeout(ctx, leaderGetTimeout)
	defer cancel()
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + bucket + "." + key})
	msg, err := b.Conn.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return nil, 0, false, fmt.Errorf("get %s from %s's leader: %w", key, bucket, err)
	}
	var resp struct {
		Message *struct {
			Seq  uint64 `json:"seq"`
			Data []byte `json:"data"` // base64 in the JSON
			Hdrs []byte `json:"hdrs"`
		} `json:"message"`
		Error *struct {
			Code    int    `json:"code"`
			ErrCode int    `json:"err_code"`
			Desc    string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, 0, false, fmt.Errorf("get %s from %s's leader: %w", key, bucket, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound):
		return nil, 0, false, nil
	case resp.Error != nil:
		return nil, 0, false, fmt.Errorf("get %s from %s's leader: %s (%d)", key, bucket, resp.Error.Desc, resp.Error.ErrCode)
	case resp.Message == nil:
		return nil, 0, false, fmt.Errorf("get %s from %s's leader: empty answer", key, bucket)
	}
	// A delete or purge leaves a marker message with no value.
	if len(resp.Message.Hdrs) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Hdrs)
		if err != nil {
			return nil, 0, false, fmt.Errorf("get %s from %s's leader: headers: %w", key, bucket, err)
		}
		if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			return nil, 0, false, nil
		}
	}
	return resp.Message.Data, resp.Message.Seq, true, nil
}
