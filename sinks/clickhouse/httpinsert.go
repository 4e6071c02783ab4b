package clickhouse

import (
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
	bufs     *buffers      // the Client's: its bodies reuse them
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

func newHTTPInserter(cfg Config, settings map[string]any, bufs *buffers) (*httpInserter, error) {
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
		bufs:     bufs,
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

// The compressed framing's header: a CityHash128 of the rest of the frame,
// then the method, the frame's size from the method on, and the data's.
const (
	frameChecksum = 16
	frameHeader   = frameChecksum + 1 + 4 + 4
	methodLZ4     = 0x82
)

// framed appends data to dst in ClickHouse's compressed framing (what
// decompress=1 reads): frames of at most frameSize bytes of data, each
// LZ4-compressed by c behind its header. ch-go's writer does the same
// one frame at a time, with a new buffer for every frame.
func framed(c *lz4.Compressor, dst, data []byte) ([]byte, error) {
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

// insert sends one block of rows for insert, an INSERT naming its columns,
// as encode streams it. A failure is returned for the loader to retry,
// each time starting at the next address.
func (h *httpInserter) insert(ctx context.Context, insert string, encode func([]byte, *stream) []byte) error {
	params := url.Values{"query": {insert + " FORMAT Native"}}
	for k, v := range h.params {
		params[k] = v
	}
	next := h.next.Load()
	i := int(next % uint32(len(h.urls)))
	// The request's bodies: the first, and any the transport asks for
	// (GetBody) to send the insert again on a new connection when a
	// kept-alive one proves closed, as it does for an in-memory body.
	var mu sync.Mutex
	var bodies []*nativeBody
	newBody := func() *nativeBody {
		b := &nativeBody{lz4: h.lz4, bufs: h.bufs, encode: encode, done: make(chan struct{})}
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, b)
		return b
	}
	// Once sent, or failed: encode's rows are the caller's again.
	waitBodies := func() *nativeBody {
		mu.Lock()
		bs := slices.Clone(bodies)
		mu.Unlock()
		for _, b := range bs {
			b.wait()
		}
		return bs[len(bs)-1]
	}
	defer waitBodies()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.urls[i]+"?"+params.Encode(), newBody())
	if err != nil {
		return fmt.Errorf("insert over http: %w", err)
	}
	req.GetBody = func() (io.ReadCloser, error) { return newBody(), nil }
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
		// The next attempt goes to the next address too: on a cluster, this
		// server may be the one that is unwell (its tables read-only while
		// ZooKeeper is away, say).
		h.next.CompareAndSwap(next, next+1)
		return fmt.Errorf("insert over http to %s: %s: %s", req.URL.Host, resp.Status, strings.TrimSpace(string(msg)))
	}
	if body := waitBodies(); body.err != nil {
		// The server took a body that ended short: never, short of a bug.
		return fmt.Errorf("insert over http to %s: sending: %w", req.URL.Host, body.err)
	}
	return nil
}

// nativeBody is an insert's request body: its block, encoded and framed as
// the server reads it while it is sent, so that neither the block nor its
// compressed form is ever held whole (some 11 MB and 3 MB per 100,000
// hits). The transport takes it through WriteTo, writing each frame
// straight to the connection; Read, which it does not use, is served
// through a pipe.
type nativeBody struct {
	lz4    bool
	bufs   *buffers // its inserter's
	encode func([]byte, *stream) []byte
	err    error // the encoding's, once done is closed

	mu      sync.Mutex
	state   int // bodyIdle, then bodyWriting or bodyCancelled
	pr      *io.PipeReader
	aborted atomic.Bool
	done    chan struct{} // closed when an encoding begun has ended
}

const (
	bodyIdle = iota
	bodyWriting
	bodyCancelled
)

var errBodyCancelled = errors.New("insert body no longer wanted")

// begin reports whether the body may be encoded, marking it so.
func (b *nativeBody) begin() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != bodyIdle {
		return false
	}
	b.state = bodyWriting
	return true
}

func (b *nativeBody) WriteTo(w io.Writer) (int64, error) {
	if !b.begin() {
		return 0, errBodyCancelled
	}
	defer close(b.done)
	return b.writeTo(w)
}

func (b *nativeBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.pr == nil {
		if b.state != bodyIdle {
			b.mu.Unlock()
			return 0, errBodyCancelled
		}
		b.state = bodyWriting
		pr, pw := io.Pipe()
		b.pr = pr
		go func() {
			defer close(b.done)
			_, err := b.writeTo(pw)
			pw.CloseWithError(err)
		}()
	}
	pr := b.pr
	b.mu.Unlock()
	return pr.Read(p)
}

func (b *nativeBody) Close() error {
	b.mu.Lock()
	pr := b.pr
	b.mu.Unlock()
	if pr != nil {
		pr.Close()
	}
	return nil
}

// wait returns once no encoding of the body is under way or can begin:
// it stops one that has not begun, and one under way at its next frame.
func (b *nativeBody) wait() {
	b.mu.Lock()
	switch b.state {
	case bodyIdle:
		b.state = bodyCancelled
		fallthrough
	case bodyCancelled:
		b.mu.Unlock()
		return
	}
	pr := b.pr
	b.mu.Unlock()
	b.aborted.Store(true)
	if pr != nil {
		pr.Close()
	}
	<-b.done
}

// writeTo encodes the block into w a frame at a time.
func (b *nativeBody) writeTo(w io.Writer) (int64, error) {
	f := &frameWriter{w: w, lz4: b.lz4, aborted: &b.aborted, chunk: b.bufs.chunks.get(), frame: b.bufs.frames.get()}
	defer b.bufs.chunks.put(f.chunk)
	defer b.bufs.frames.put(f.frame)
	if f.lz4 {
		f.compressor = b.bufs.compressors.get()
		defer b.bufs.compressors.put(f.compressor)
	}
	if cap(*f.chunk) < frameSize+chunkSlack {
		*f.chunk = make([]byte, 0, frameSize+chunkSlack)
	}
	buf := b.encode((*f.chunk)[:0], &stream{limit: frameSize, flush: f.flush})
	f.finish(buf)
	*f.chunk = buf[:0]
	b.err = f.err
	return f.n, f.err
}

// frameWriter writes a block to w as it is encoded: LZ4 frames of
// frameSize bytes of it, the last one shorter, or with lz4 off pieces of
// about that size as they are.
type frameWriter struct {
	w       io.Writer
	lz4     bool
	aborted *atomic.Bool
	chunk   *[]byte // the block's encoding buffer
	frame   *[]byte // a compressed frame
	// compressor compresses every frame of the body, with lz4 on.
	compressor *lz4.Compressor
	n          int64
	err        error
}

func (f *frameWriter) flush(buf []byte) []byte {
	if !f.lz4 {
		f.write(buf)
		return buf[:0]
	}
	at := 0
	for ; len(buf)-at >= frameSize; at += frameSize {
		f.compress(buf[at : at+frameSize])
	}
	return buf[:copy(buf, buf[at:])]
}

// finish writes what is left of the block.
func (f *frameWriter) finish(buf []byte) {
	buf = f.flush(buf)
	if f.lz4 && len(buf) > 0 {
		f.compress(buf)
	}
}

func (f *frameWriter) compress(data []byte) {
	if f.err != nil {
		return // the body is dead: compressing the rest would only delay the error
	}
	var err error
	if *f.frame, err = framed(f.compressor, (*f.frame)[:0], data); err != nil && f.err == nil {
		f.err = err
	}
	f.write(*f.frame)
}

func (f *frameWriter) write(p []byte) {
	if f.err != nil {
		return
	}
	if f.aborted.Load() {
		f.err = errBodyCancelled
		return
	}
	n, err := f.w.Write(p)
	f.n += int64(n)
	f.err = err
}

// chunkSlack is room past frameSize in an encoding buffer for the value
// that crosses it, most often without growing the buffer.
const chunkSlack = 64 << 10
