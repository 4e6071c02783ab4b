package tail

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// fingerprintLen is how much of a file's head identifies it beside its
// inode: inodes are reused after deletion, and a truncated file that grows
// again keeps its inode but not its first line.
const fingerprintLen = 1024

// identity tells one file from another across renames and restarts.
type identity struct {
	dev, ino uint64
	fpLen    int    // bytes hashed; less than fingerprintLen while the file is small
	fp       string // hex sha256 of the first fpLen bytes
}

func (id identity) String() string {
	return fmt.Sprintf("%d:%d:%d:%s", id.dev, id.ino, id.fpLen, id.fp)
}

func parseIdentity(s string) (identity, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 4 {
		return identity{}, fmt.Errorf("file identity %q: want dev:ino:len:hash", s)
	}
	dev, err1 := strconv.ParseUint(parts[0], 10, 64)
	ino, err2 := strconv.ParseUint(parts[1], 10, 64)
	n, err3 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || n > fingerprintLen {
		return identity{}, fmt.Errorf("file identity %q: bad number", s)
	}
	return identity{dev: dev, ino: ino, fpLen: n, fp: parts[3]}, nil
}

// identify reads a file's identity from an open handle.
func identify(f *os.File) (identity, error) {
	st, err := f.Stat()
	if err != nil {
		return identity{}, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	id := identity{}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(sys.Dev), sys.Ino
	}
	id.fpLen = int(min(st.Size(), fingerprintLen))
	id.fp, err = headHash(f, id.fpLen)
	return id, err
}

func headHash(f *os.File, n int) (string, error) {
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return "", fmt.Errorf("read head of %s: %w", f.Name(), err)
	}
	return hashHead(buf), nil
}

// hashHead is the fingerprint of a file's first bytes.
func hashHead(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// headMatches reports whether head starts with the bytes a saved identity
// fingerprinted. A saved fingerprint may be shorter than head: it was
// taken while the file was smaller.
func headMatches(head []byte, saved identity) bool {
	return len(head) >= saved.fpLen && hashHead(head[:saved.fpLen]) == saved.fp
}

// contentKey names a file by its first bytes alone. It survives what the
// inode does not: compression (access.log.1 → access.log.1.gz) and the
// copy copytruncate makes.
func (id identity) contentKey() string {
	return strconv.Itoa(id.fpLen) + ":" + id.fp
}

// sameFile reports whether f is the file a saved identity describes: the
// same inode, and the same first bytes as far as the saved fingerprint went.
func sameFile(f *os.File, saved identity) (bool, error) {
	cur, err := identify(f)
	if err != nil {
		return false, err
	}
	if cur.dev != saved.dev || cur.ino != saved.ino || cur.fpLen < saved.fpLen {
		return false, nil
	}
	h, err := headHash(f, saved.fpLen)
	return h == saved.fp, err
}

// sameInode reports whether path now names the open file f.
func sameInode(path string, f *os.File) (same bool, exists bool) {
	a, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	b, err := f.Stat()
	if err != nil {
		return false, true
	}
	return os.SameFile(a, b), true
}
