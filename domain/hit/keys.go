package hit

import (
	"hash/fnv"
	"strings"
)

// Headers of a hits message that its keys are derived from. The tailer
// sets them (pipeline/tail names the same headers).
const (
	// HeaderSource names where a file's lines come from: the host and the
	// file's real path, the same for every tailer that takes the file
	// over and for its rotated copies.
	HeaderSource = "Pagewatch-Source"
	// HeaderFile is the file's identity, dev:ino:len:hash, the hash being
	// that of its first len bytes (at most 1 KiB).
	HeaderFile  = "Pagewatch-File"
	HeaderStart = "Pagewatch-Start"
	HeaderEnd   = "Pagewatch-End"
	// HeaderStream names a stdin or syslog stream: "<name>.<start>".
	HeaderStream = "Pagewatch-Stream"
	// HeaderAgain, on a file's message, is a byte offset of the file
	// below which the message's lines may have been published before in
	// other messages: ones NATS acknowledged and then forgot (a restart
	// after a power cut), which the tailer found out and published again,
	// cut into other messages. The lines are the same hits (the same
	// event ids); a loader counts in page_minutes only those it has not
	// loaded yet, since the forgotten messages' counts, under their own
	// keys, are still there.
	HeaderAgain = "Pagewatch-Again"
	headerMsgID = "Nats-Msg-Id"
)

// deterministic marks a key derived from a message's content: JetStream
// sequences stay below 2^63, so the keys of rows loaded before keys were
// deterministic never equal one derived after.
const deterministic = 1 << 63

// Keys derives a message's keys from its headers (get returns one by
// name), so that every copy of the same lines gets the same ones:
//
//   - a file's lines: LineKey from the source and the file's content key
//     (the hash of its head, which survives renames, copies and gzip), so
//     a line's event id is (source, file, offset) whichever message, subject
//     or run published it; Key adds the message's byte range;
//   - a stdin or syslog batch: its Nats-Msg-Id, the same for every retry
//     of the batch, names it (Key) and, without its batch number, the
//     stream its offsets count in (LineKey).
//
// A message with neither (published before these headers) keeps its
// JetStream sequence as both: 0, 0.
func Keys(get func(string) string) (key, lineKey uint64) {
	if src, file := get(HeaderSource), get(HeaderFile); src != "" && file != "" {
		content, ok := contentKey(file)
		if !ok {
			return 0, 0
		}
		lineKey = hash(src, content)
		return hash(src, content, get(HeaderStart), get(HeaderEnd)), lineKey
	}
	if get(HeaderStream) != "" {
		id := get(headerMsgID)
		i := strings.LastIndexByte(id, '.')
		if i <= 0 {
			return 0, 0
		}
		return hash("stream", id), hash("stream", id[:i])
	}
	return 0, 0
}

// contentKey is the len:hash part of a file identity: the inode changes
// when logrotate copies or compresses the file, its first bytes do not.
func contentKey(file string) (string, bool) {
	parts := strings.Split(file, ":")
	if len(parts) != 4 {
		return "", false
	}
	return parts[2] + ":" + parts[3], true
}

func hash(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64() | deterministic
}
