package mail

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gomail "github.com/wneessen/go-mail"
)

// fileTransport writes each message to <dir>/<key>.eml. It stands in for a
// mail server in the demo and lets people inspect exactly what would be
// sent.
type fileTransport struct {
	dir string
}

func newFileTransport(cfg FileConfig) (*fileTransport, error) {
	// 0o700: messages carry recipients' addresses.
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("mail.file.dir: %w", err)
	}
	return &fileTransport{dir: cfg.Dir}, nil
}

// send writes atomically — temp file, fsync, rename — so a reader watching
// the directory never sees a half-written message, and a crash leaves
// either the old file or the new one.
func (f *fileTransport) send(_ context.Context, key string, m *gomail.Msg) (err error) {
	final := filepath.Join(f.dir, FileName(key))
	tmp, err := os.CreateTemp(f.dir, ".tmp-*.eml")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()

	w := bufio.NewWriter(tmp)
	if _, err := m.WriteTo(w); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("rename to %s: %w", final, err)
	}
	// The rename is only durable once the directory entry is on disk.
	return syncDir(f.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for sync: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	// Some filesystems refuse fsync on directories; that is not worth
	// failing a message that is already written.
	if err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

func (f *fileTransport) close() error { return nil }

const maxFileKey = 120

// FileName returns the name the file transport gives the message for key:
// the key itself when it is a safe file name, otherwise the key with unsafe
// bytes replaced plus a short hash, so distinct keys never share a file.
func FileName(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '_', c == '.' && i > 0: // no leading dot: hidden files, ".."
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name != key || len(name) > maxFileKey || name == "" {
		sum := sha256.Sum256([]byte(key))
		name = name[:min(len(name), maxFileKey)] + "-" + hex.EncodeToString(sum[:4])
	}
	return name + ".eml"
}
