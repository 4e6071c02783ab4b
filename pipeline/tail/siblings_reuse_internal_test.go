package tail

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A rotated file listed, then replaced under its name by a file with its
// inode number: rotation frees an inode (gzip removes access.log.1) and
// creates a file right after (copytruncate's next access.log.1), which
// the file system gives the freed number. Opening the listed sibling by
// inode alone read the new copy's lines under the old file's identity,
// on the old file's subject, and marked that subject complete: the old
// file, compressed meanwhile, was never published. Rewriting the file in
// place keeps the inode for certain, which is what this test needs.
func TestSiblingOpenChecksHead(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "access.log")
	old := strings.Repeat("old generation line\n", 100)
	for name, content := range map[string]string{"access.log": "live line\n", "access.log.1": old} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &rotatedFiles{
		env:    &fileEnv{cfg: Config{Inputs: []Input{{Path: live}}}},
		in:     Input{Path: live},
		logger: slog.New(slog.DiscardHandler),
	}
	sibs, err := r.list()
	if err != nil || len(sibs) != 1 {
		t.Fatalf("siblings %v, err %v", sibs, err)
	}
	s := sibs[0]

	// delaycompress and the shift: the old generation is access.log.2.gz;
	// the next copy is a new access.log.1, with the same inode.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte(old)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "access.log.2.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "access.log.1"), []byte(strings.Repeat("next generation\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}

	if _, err := (&sibling{path: s.path, dev: s.dev, ino: s.ino, head: s.head}).open(); !errors.Is(err, errMoved) {
		t.Fatalf("open of a name that holds another file with the same inode: err %v, want errMoved", err)
	}
	c, err := r.open(s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if filepath.Base(s.path) != "access.log.2.gz" {
		t.Fatalf("found the listed file again as %s, want access.log.2.gz", s.path)
	}
	got, err := io.ReadAll(io.NewSectionReader(c, 0, int64(len(old))+1))
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if string(got) != old {
		t.Fatalf("read %q..., want the old generation", got[:min(len(got), 40)])
	}
}
