package discover

import "errors"

// event is a change in a watched directory: an entry created, removed or
// renamed (moved in counts as created, moved out as renamed).
type event struct {
	Name string // the entry's path, or the directory's for its own removal or move
	Op   op
}

// op is what happened to an entry; several may be set.
type op uint8

const (
	opCreate op = 1 << iota
	opRemove
	opRename
)

// Has reports whether o includes x.
func (o op) Has(x op) bool { return o&x != 0 }

// errEventOverflow: the kernel's event queue overflowed and events were
// lost (sysctl fs.inotify.max_queued_events); only a full scan can tell
// what changed.
var errEventOverflow = errors.New("inotify event queue overflow")
