package clickhouse

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-faster/city"
	"github.com/pierrec/lz4/v4"
)

// httpInserter posts Native blocks to the servers' HTTP interface as
// `INSERT ... FORMAT Native`. 18.16 reads no inline data on the native
// protocol, and the driver takes rows only through its column types; over
// HTTP the body is the block as pagewatch encodes it.
type httpInserter struct {
	client   *http.Client
	urls     []string // one per http_addr, without a query string
	user     string
	password string
	params   url.Values // database and the insert settings
	lz4      bool
	next     atomic.Uint32 // the address to try first
}

// HTTP compressions (clickhouse.http_compression).
const (
	compressionLZ4  = "lz4"
	compressionNone = "none"
)

// frameSize bounds each compressed frame's data, as ClickHouse's own
// clients do (max_compress_block_size), so the server decompresses a
// large insert a piece at a time.
const frameSize = 1 << 20

// errorBytes bounds how much of an error response is read.
const errorBytes = 64 << 10

func newHTTPInserter(cfg Config, settings map[string]any) (*httpInserter, error) {
	tlsCfg, err := cfg.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("clickhouse.tls.%w", err)
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	h := &httpInserter{
		client: &http.Client{
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{Timeout: cfg.DialTimeout}).DialContext,
				TLSClientConfig:     tlsCfg,
				TLSHandshakeTimeout: cfg.DialTimeout,
				MaxIdleConnsPerHost: 8,
				// Below the server's keep_alive_timeout (3 s by default),
				// so a reused connection is not one the server just closed.
				IdleConnTimeout: 2 * time.Second,
			},
			// Bounded like the native protocol's reads, so an insert the
			// server never answers fails instead of hanging.
			Timeout: 2 * time.Minute,
		},
		user:     cfg.Username,
		password: cfg.Password.Reveal(),
		params:   url.Values{"database": {cfg.Database}},
		lz4:      cfg.HTTPCompression == compressionLZ4,
	}
	for _, a := range cfg.HTTPAddr {
		h.urls = append(h.urls, scheme+"://"+a+"/")
	}
	for k, v := range settings {
		h.params.Set(k, fmt.Sprint(v))
	}
	if h.lz4 {
		h.params.Set("decompress", "1")
	}
	return h, nil
}

// compressors reuse LZ4 compressors (each holds a 64 KiB hash table).
var compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// The compressed framing's header: a CityHash128 of the rest of the frame,
// then the method, the frame's size from the method on, and the data's.
const (
	frameChecksum = 16
	frameHeader   = frameChecksum + 1 + 4 + 4
	methodLZ4     = 0x82
)

// framed appends data to dst in ClickHouse's compressed framing (what
// decompress=1 reads): frames of at most frameSize bytes of data, each
// LZ4-compressed behind its header. ch-go's writer does the same one
// frame at a time, with a new buffer for every frame.
func framed(dst, data []byte) ([]byte, error) {
	c := compressors.Get().(*lz4.Compressor)
	defer compressors.Put(c)
	for len(data) > 0 {
		n := min(len(data), frameSize)
		start := len(dst)
		dst = slices.Grow(dst, frameHeader+lz4.CompressBlockBound(n))
		dst = dst[:start+frameHeader+lz4.CompressBlockBound(n)]
		m, err := c.CompressBlock(data[:n], dst[start+frameHeader:])
		if err != nil {
			return dst[:start], fmt.Errorf("lz4: %w", err)
		}
		dst = dst[:start+frameHeader+m]
		f := dst[start:]
		f[frameChecksum] = methodLZ4
		binary.LittleEndian.PutUint32(f[frameChecksum+1:], uint32(frameHeader-frameChecksum+m))
		binary.LittleEndian.PutUint32(f[frameChecksum+5:], uint32(n))
		h := city.CH128(f[frameChecksum:])
		binary.LittleEndian.PutUint64(f[0:], h.Low)
		binary.LittleEndian.PutUint64(f[8:], h.High)
		data = data[n:]
	}
	return dst, nil
}

// insert sends one block of rows for insert, an INSERT naming its columns.
// A failure is returned for the loader to retry, each time starting at
// the next address.
func (h *httpInserter) insert(ctx context.Context, insert string, native []byte) error {
	body := native
	var compressed *[]byte
	if h.lz4 {
		compressed = bodies.get()
		var err error
		if *compressed, err = framed((*compressed)[:0], native); err != nil {
			return err
		}
		body = *compressed
	}
	params := url.Values{"query": {insert + " FORMAT Native"}}
	for k, v := range h.params {
		params[k] = v
	}
	next := h.next.Load()
	i := int(next % uint32(len(h.urls)))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.urls[i]+"?"+params.Encode(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("insert over http: %w", err)
	}
	req.SetBasicAuth(h.user, h.password)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := h.client.Do(req)
	if err != nil {
		h.next.CompareAndSwap(next, next+1)
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL: it holds no secret, but is long
		}
		return fmt.Errorf("insert over http to %s: %w", req.URL.Host, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, errorBytes))
	// An INSERT answers 200 and nothing else once every row is written;
	// an exception is a status (or, from servers that already sent the
	// headers, a code header) and its text.
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-ClickHouse-Exception-Code") != "" {
		return fmt.Errorf("insert over http to %s: %s: %s", req.URL.Host, resp.Status, strings.TrimSpace(string(msg)))
	}
	// Reused only now: after a failure the client may still be sending it.
	if compressed != nil {
		bodies.put(compressed)
	}
	return nil
}

// bodies reuse compressed request bodies.
var bodies = make(freeList[[]byte], 2)
