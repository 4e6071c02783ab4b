package tail

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sibling is a rotated copy of an input in the input's directory:
// access.log.1, access.log.2.gz, access.log-20261122.
type sibling struct {
	path     string
	gz       bool
	size     int64 // on disk: compressed for .gz
	mtime    time.Time
	dev, ino uint64
	// head is the first fingerprintLen bytes of the content, decompressed
	// for .gz: what identifies the file once its inode no longer does.
	head  []byte
	order rotationOrder
}

// unreadableExts are compressions pagewatch does not read. Such siblings
// are left alone rather than published as garbage lines.
var unreadableExts = []string{".bz2", ".xz", ".zst", ".lz4", ".lzma", ".zip", ".Z", ".br"}

// isSiblingName reports whether name looks like a rotated copy of base:
// base, then a separator (access.log.1, access.log-20261122,
// access.log_old). Requiring the separator keeps access.logger out.
func isSiblingName(name, base string) bool {
	return len(name) > len(base)+1 && strings.HasPrefix(name, base) && strings.IndexByte(".-_", name[len(base)]) >= 0
}

// list lists the input's rotated siblings, oldest first. The live
// file is left out, under any name (a hard link, a symlink's target) and
// as a copy (same first bytes: `cp access.log access.log.bak`, or
// copytruncate before the truncate), since the follower reads those bytes
// at the path. A name that is also a sibling of a longer input in the same
// directory (access.log.ssl.1 beside inputs access.log and access.log.ssl)
// belongs to that input only, and a file a glob input follows (or would,
// once found) is no rotated copy at all.
func (r *rotatedFiles) list() ([]*sibling, error) {
	dir, base := filepath.Dir(r.in.Path), filepath.Base(r.in.Path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list rotated files of %s: %w", r.in.Path, err)
	}
	fs := r.env.files
	others := fs.liveNames(r.env.cfg.Inputs, dir, base)
	var liveID *identity
	var liveSt os.FileInfo
	if f, err := os.Open(r.in.Path); err == nil {
		if id, err := identify(f); err == nil {
			liveID = &id
		}
		liveSt, _ = f.Stat()
		f.Close()
	}
	var out []*sibling
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if !isSiblingName(name, base) || !e.Type().IsRegular() || ownedByOther(name, others) || fs.isLiveFile(path) {
			continue
		}
		s := &sibling{path: path, gz: strings.HasSuffix(name, ".gz")}
		if !s.gz && hasUnreadableExt(name) {
			r.logger.Debug("rotated file compressed in a format not read; skipped", "rotated", path)
			continue
		}
		// Stat and head from one descriptor: logrotate may give the name
		// to another file between two looks at it.
		c, st, err := s.openAny()
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				r.logger.Warn("cannot read rotated file; skipped", "rotated", path, "err", err)
			}
			continue // removed since the listing: logrotate at work
		}
		if liveSt != nil && os.SameFile(st, liveSt) {
			c.Close()
			continue
		}
		s.size, s.mtime = st.Size(), st.ModTime()
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			s.dev, s.ino = uint64(sys.Dev), sys.Ino
		}
		s.order = parseOrder(strings.TrimSuffix(name[len(base)+1:], ".gz"))
		s.head, err = readHead(c)
		c.Close()
		if err != nil {
			r.logger.Warn("cannot read rotated file; skipped", "rotated", path, "err", err)
			continue
		}
		if liveID != nil && liveID.fpLen > 0 && headMatches(s.head, *liveID) {
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return olderFirst(out[i], out[j]) })
	return out, nil
}

func ownedByOther(name string, others []string) bool {
	for _, o := range others {
		if name == o || isSiblingName(name, o) {
			return true
		}
	}
	return false
}

func hasUnreadableExt(name string) bool {
	for _, ext := range unreadableExts {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// rotationOrder is what a rotated name says about its age.
type rotationOrder struct {
	numbered bool   // access.log.3: higher is older
	num      int64  //
	date     string // access.log-20261122 (digits only): earlier is older
}

// parseOrder reads the suffix after the base name and its separator, .gz
// removed: "1", "20261122", "2026-11-22", "20261122-1700000000".
func parseOrder(suffix string) rotationOrder {
	if len(suffix) > 0 && len(suffix) <= 6 {
		if n, err := strconv.ParseInt(suffix, 10, 64); err == nil && n >= 0 {
			return rotationOrder{numbered: true, num: n}
		}
	}
	digits := make([]byte, 0, len(suffix))
	for i := 0; i < len(suffix); i++ {
		switch c := suffix[i]; {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case c == '-' || c == '_' || c == '.':
		default:
			return rotationOrder{}
		}
	}
	if len(digits) >= 8 {
		return rotationOrder{date: string(digits)}
	}
	return rotationOrder{}
}

// olderFirst orders siblings by age, as their names tell (logrotate's
// numbers and dates), and by modification time where names do not say
// (mixed or unknown schemes): rename and gzip both keep a file's mtime,
// which is when it was last written. The plain and .gz copies of one
// rotation (while gzip runs) sort plain first.
func olderFirst(a, b *sibling) bool {
	switch {
	case a.order.numbered && b.order.numbered && a.order.num != b.order.num:
		return a.order.num > b.order.num
	case a.order.date != "" && len(a.order.date) == len(b.order.date) && a.order.date != b.order.date:
		return a.order.date < b.order.date
	case !a.mtime.Equal(b.mtime):
		return a.mtime.Before(b.mtime)
	case a.gz != b.gz:
		return !a.gz
	}
	return a.path < b.path
}

// readHead reads the first fingerprintLen bytes of the content.
func readHead(c *content) ([]byte, error) {
	head := make([]byte, fingerprintLen)
	n, err := c.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("read head: %w", err)
	}
	return head[:n], nil
}

// identity is what the sibling is published with. A plain file keeps its
// inode. A .gz is a new inode holding other bytes, so it is named by its
// decompressed head alone, with device and inode 0, which no real file
// has: nothing can take it for an inode it is not.
func (s *sibling) identity() identity {
	id := identity{fpLen: len(s.head), fp: hashHead(s.head)}
	if !s.gz {
		id.dev, id.ino = s.dev, s.ino
	}
	return id
}

// How a sibling matches a saved identity.
const (
	noMatch = iota
	// byContent: the saved file's first bytes, in another inode (a .gz, or
	// copytruncate's copy). An empty saved head proves nothing and never
	// matches this way.
	byContent
	// byInode: the saved file itself, renamed.
	byInode
)

func (s *sibling) match(saved identity) int {
	switch {
	case !headMatches(s.head, saved):
		return noMatch
	case !s.gz && s.dev == saved.dev && s.ino == saved.ino:
		return byInode
	case saved.fpLen > 0:
		return byContent
	}
	return noMatch
}

// findSibling returns the index of the sibling holding the saved file, or
// -1: the renamed file itself if it is there, else a copy of its content,
// a plain one before a .gz (which may still be being written by gzip).
func findSibling(sibs []*sibling, saved identity) int {
	best, bestRank := -1, noMatch
	for i, s := range sibs {
		rank := s.match(saved) * 2
		if rank > 0 && !s.gz {
			rank++
		}
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}

// content is a sibling opened for reading through a pipe.
type content struct {
	io.ReaderAt
	f    *os.File
	disk *countingReader // under the gzip reader; nil for a plain file
}

// diskBytes is how much of the file on disk has been read once readPos
// bytes of content have been: compressed bytes for a .gz, which is what
// its size, and so the progress total, counts.
func (c *content) diskBytes(readPos int64) int64 {
	if c.disk == nil {
		return readPos
	}
	return c.disk.n
}

func (c *content) Close() error { return c.f.Close() }

// errMoved means a sibling's name now holds another file: logrotate
// shifted the names (.1 → .2) since the sibling was listed.
var errMoved = errors.New("rotated file renamed since listed")

// open opens the content from its start, failing with errMoved when the
// name holds another file than the one listed. The inode alone does not
// tell: a freed inode is given to the next file created, and rotation
// creates one right after it removes one (gzip removes access.log.1,
// copytruncate's next copy is a new access.log.1), so a plain file's
// head is checked too. A .gz's is not: its stream cannot be read twice,
// and logrotate renames a .gz but never creates one where one was.
func (s *sibling) open() (*content, error) {
	c, st, err := s.openAny()
	if err != nil {
		return nil, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if ok && (uint64(sys.Dev) != s.dev || sys.Ino != s.ino) {
		c.Close()
		return nil, fmt.Errorf("%s: %w", s.path, errMoved)
	}
	if !s.gz {
		head, err := readHead(c)
		if err != nil {
			c.Close()
			return nil, err
		}
		if !bytes.HasPrefix(head, s.head) {
			c.Close()
			return nil, fmt.Errorf("%s: %w", s.path, errMoved)
		}
	}
	return c, nil
}

// sameAs reports whether o, listed later, is the file s: same inode, and
// s's head at its start (a file listed while small has grown since).
func (s *sibling) sameAs(o *sibling) bool {
	return o.dev == s.dev && o.ino == s.ino && o.gz == s.gz && bytes.HasPrefix(o.head, s.head)
}

// open opens s, finding it again when logrotate renamed it (or
// compressed it) since it was listed: by its inode, else by its content
// among the siblings now, a plain copy first. Reading a name without
// that check reads whatever file has the name now, which after a shift
// is the next rotation, published under this one's identity.
func (r *rotatedFiles) open(s *sibling) (*content, error) {
	c, err := s.open()
	if err == nil || !errors.Is(err, errMoved) && !errors.Is(err, os.ErrNotExist) {
		return c, err
	}
	sibs, lerr := r.list()
	if lerr != nil {
		return nil, err
	}
	found := -1
	for i, o := range sibs {
		if s.sameAs(o) {
			found = i
			break
		}
	}
	if found < 0 {
		found = findSibling(sibs, s.identity())
	}
	if found < 0 {
		return nil, err
	}
	r.logger.Debug("rotated file renamed since listed; found it again", "listed_as", s.path, "now", sibs[found].path)
	*s = *sibs[found]
	return s.open()
}

// openAny opens whatever file is at the sibling's name now, and stats it.
func (s *sibling) openAny() (*content, os.FileInfo, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, nil, fmt.Errorf("open rotated file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat rotated file: %w", err)
	}
	c, err := s.contentOf(f)
	return c, st, err
}

// contentOf reads f from its start: the file itself, or a gzip stream
// over it, decompressed as it is read so memory stays bounded whatever
// the file's size.
func (s *sibling) contentOf(f *os.File) (*content, error) {
	if !s.gz {
		return &content{ReaderAt: f, f: f}, nil
	}
	disk := &countingReader{r: f}
	zr, err := gzip.NewReader(bufio.NewReaderSize(disk, 64<<10))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("gzip %s: %w", s.path, err)
	}
	return &content{ReaderAt: &streamAt{r: zr}, f: f, disk: disk}, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errShorter means a file's content ends before the offset asked for.
var errShorter = errors.New("content ends before the offset")

// streamAt serves ReadAt from a stream read front to back. That is how the
// follower reads (at readPos, which only grows); a first read past the
// start skips to it by decompressing and dropping what comes before.
type streamAt struct {
	r   io.Reader
	pos int64
}

func (s *streamAt) ReadAt(p []byte, off int64) (int, error) {
	if off < s.pos {
		return 0, fmt.Errorf("compressed stream at %d cannot go back to %d", s.pos, off)
	}
	if off > s.pos {
		n, err := io.CopyN(io.Discard, s.r, off-s.pos)
		s.pos += n
		if errors.Is(err, io.EOF) {
			return 0, errShorter
		}
		if err != nil {
			return 0, err
		}
	}
	n := 0
	for n < len(p) {
		m, err := s.r.Read(p[n:])
		n += m
		s.pos += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
