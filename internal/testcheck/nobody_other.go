//go:build !unix

package testcheck

import "testing"

// RerunAsNobody returns false: outside Unix there is no root to leave,
// and the test goes on in this process.
func RerunAsNobody(t *testing.T) bool {
	return false
}
