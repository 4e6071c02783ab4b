package discover

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// maxDepth bounds how deep a path a glob is followed to. `**` does not
// descend into symlinked directories, so only bind mounts can make a loop;
// this keeps one from being walked forever.
const maxDepth = 128

// state is a position in a glob: in the directory it belongs to, segment
// seg of glob pat is matched against the entries.
type state struct{ pat, seg int }

// fileKey identifies a file, so one reached under two paths (a symlinked
// directory, a hard link) is reported once.
type fileKey struct{ dev, ino uint64 }

func keyOf(fi fs.FileInfo) fileKey {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileKey{dev: uint64(st.Dev), ino: st.Ino}
	}
	return fileKey{}
}

type candidate struct {
	key fileKey
	pat int // the first glob matching the path
}

// scanResult is what a walk found.
type scanResult struct {
	// dirs holds every directory that can hold a match or lead to one,
	// with the states already walked there: a directory reached again
	// (nested roots, a second glob) is only walked for what is new.
	dirs    map[string][]state
	files   map[string]candidate
	missing []string // roots that do not exist
	errs    []error
}

func newScanResult(dirs map[string][]state) *scanResult {
	if dirs == nil {
		dirs = map[string][]state{}
	}
	return &scanResult{dirs: dirs, files: map[string]candidate{}}
}

// walker matches the globs against the file system. It holds no state of
// its own, so Scan may run beside Run.
type walker struct {
	incs []include
	excs []exclude
}

// scan walks every glob from its root. visit, if set, is called for each
// directory before it is read, so that a watch placed there sees every
// entry made after the read.
func (wk *walker) scan(ctx context.Context, visit func(dir string)) *scanResult {
	res := newScanResult(nil)
	roots := map[string][]state{}
	for i, in := range wk.incs {
		roots[in.root] = append(roots[in.root], state{pat: i})
	}
	for _, root := range slices.Sorted(maps.Keys(roots)) {
		fi, err := os.Stat(root)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			res.missing = append(res.missing, root)
			continue
		case err != nil:
			res.errs = append(res.errs, err)
			continue
		case !fi.IsDir():
			res.errs = append(res.errs, fmt.Errorf("%s: not a directory", root))
			continue
		}
		wk.scanDir(ctx, res, root, roots[root], visit)
	}
	return res
}

// scanDir walks dir for states, the positions reached there.
func (wk *walker) scanDir(ctx context.Context, res *scanResult, dir string, states []state, visit func(string)) {
	if ctx.Err() != nil {
		return
	}
	old := res.dirs[dir]
	var fresh []state
	for _, st := range states {
		if !slices.Contains(old, st) && !slices.Contains(fresh, st) {
			fresh = append(fresh, st)
		}
	}
	if len(fresh) == 0 {
		return
	}
	res.dirs[dir] = append(old, fresh...)
	if visit != nil {
		visit(dir)
	}
	exp := wk.expand(fresh)
	if names, ok := wk.literals(exp); ok {
		// Only literal names are wanted here: look them up rather than
		// read what may be a large directory (a web root, /home).
		for _, name := range names {
			wk.entry(ctx, res, dir, name, nil, exp, visit)
		}
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		res.errs = append(res.errs, err) // entries read before the error still count
	}
	for _, e := range entries {
		wk.entry(ctx, res, dir, e.Name(), e, exp, visit)
	}
}

// expand adds, for each "**", the position after it: "**" matches no
// directory too.
func (wk *walker) expand(states []state) []state {
	out := slices.Clone(states)
	for _, st := range states {
		if wk.incs[st.pat].segs[st.seg].kind == segAny {
			out = append(out, state{st.pat, st.seg + 1})
		}
	}
	return out
}

func (wk *walker) literals(states []state) ([]string, bool) {
	var names []string
	for _, st := range states {
		sg := wk.incs[st.pat].segs[st.seg]
		if sg.kind != segLiteral {
			return nil, false
		}
		if !slices.Contains(names, sg.text) {
			names = append(names, sg.text)
		}
	}
	return names, true
}

// entry matches one directory entry against states: a matching regular
// file becomes a candidate, a directory some state continues into is
// walked. de is nil when the entry was not read from its directory.
func (wk *walker) entry(ctx context.Context, res *scanResult, dir, name string, de fs.DirEntry, states []state, visit func(string)) {
	var child []state
	pat, anyDir := -1, false
	for _, st := range states {
		segs := wk.incs[st.pat].segs
		switch sg := segs[st.seg]; {
		case sg.kind == segAny:
			child, anyDir = append(child, st), true
		case !sg.match(name):
		case st.seg == len(segs)-1:
			if pat < 0 || st.pat < pat {
				pat = st.pat
			}
		default:
			child = append(child, state{st.pat, st.seg + 1})
		}
	}
	if len(child) == 0 && pat < 0 {
		return
	}
	full := filepath.Join(dir, name)
	var typ fs.FileMode
	if de != nil {
		typ = de.Type()
	} else {
		fi, err := os.Lstat(full)
		if err != nil {
			return
		}
		typ = fi.Mode().Type()
	}
	link := typ&fs.ModeSymlink != 0
	if len(child) > 0 && (typ.IsDir() || link) {
		if link {
			// A symlinked directory is followed where a glob segment
			// names it, which uses up a segment, but never by "**": that
			// is what could loop.
			if anyDir {
				child = slices.DeleteFunc(child, func(st state) bool { return wk.incs[st.pat].segs[st.seg].kind == segAny })
			}
			if fi, err := os.Stat(full); err != nil || !fi.IsDir() {
				child = nil
			}
		}
		if len(child) > 0 && !wk.pruned(full) {
			if strings.Count(full, "/") > maxDepth {
				res.errs = append(res.errs, fmt.Errorf("%s: deeper than %d directories; not followed", full, maxDepth))
			} else {
				wk.scanDir(ctx, res, full, child, visit)
			}
		}
	}
	if pat >= 0 && !typ.IsDir() && !wk.excluded(full) {
		// Stat follows a symlink to its file, and gives the identity.
		if fi, err := os.Stat(full); err == nil && fi.Mode().IsRegular() {
			if c, ok := res.files[full]; !ok || pat < c.pat {
				res.files[full] = candidate{key: keyOf(fi), pat: pat}
			}
		}
	}
}

func (wk *walker) excluded(p string) bool {
	for i := range wk.excs {
		if wk.excs[i].excludesFile(p) {
			return true
		}
	}
	return false
}

func (wk *walker) pruned(dir string) bool {
	for i := range wk.excs {
		if wk.excs[i].prunesDir(dir) {
			return true
		}
	}
	return false
}

// sortedUnique returns the candidates' paths in order, keeping the first
// path of each file reached under several.
func sortedUnique(files map[string]candidate) []string {
	paths := slices.Sorted(maps.Keys(files))
	seen := make(map[fileKey]bool, len(paths))
	out := paths[:0]
	for _, p := range paths {
		k := files[p].key
		if k != (fileKey{}) && seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, p)
	}
	return out
}
