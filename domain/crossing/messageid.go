package crossing

import (
	"crypto/sha256"
	"encoding/hex"
)

// MessageID returns the Message-ID (without angle brackets) used for the
// crossing key. It is derived from the key alone so that a retried or
// duplicated send carries the same ID and receivers can spot it.
func MessageID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:32] + "@pagewatch"
}
