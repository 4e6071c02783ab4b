package tail

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	id, _, err := identifyHead(f)
	return id, err
}

// identifyHead is identify, with the head it hashed: what a saved
// identity with a shorter fingerprint is checked against, from the same
// read (a second read may see the file truncated in between).
func identifyHead(f *os.File) (identity, []byte, error) {
	st, err := f.Stat()
	if err != nil {
		return identity{}, nil, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	id := identity{}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(sys.Dev), sys.Ino
	}
	head := make([]byte, min(st.Size(), fingerprintLen))
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return identity{}, nil, fmt.Errorf("read head of %s: %w", f.Name(), err)
	}
	// Truncated since the stat: the head is what is there.
	head = head[:n]
	id.fpLen, id.fp = n, hashHead(head)
	return id, head, nil
}

// sameGeneration reports whether head, read from the file id, is still
// the file was: same inode, same first bytes as far as was fingerprinted.
func sameGeneration(id identity, head []byte, was identity) bool {
	return oneInode(id, was) && headMatches(head, was)
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
