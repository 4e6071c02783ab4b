package console

import (
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// An unknown name is checked against a hash as costly as the costliest
// user's, so the answer's time does not tell which names exist.
func TestDummyHashCostsAsMuchAsTheUsers(t *testing.T) {
	cfg := DefaultConfig()
	for i, cost := range []int{bcrypt.MinCost, bcrypt.MinCost + 2, bcrypt.MinCost + 1} {
		h, err := bcrypt.GenerateFromPassword([]byte("pw"), cost)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Users = append(cfg.Users, User{Name: string(rune('a' + i)), PasswordHash: string(h), Role: Viewer})
	}
	a, err := newAuth(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := bcrypt.Cost(a.dummyHash); err != nil || got != bcrypt.MinCost+2 {
		t.Errorf("the dummy hash's cost is %d (%v), want the users' highest, %d", got, err, bcrypt.MinCost+2)
	}
	if _, ok := a.check("nobody", "pw"); ok {
		t.Error("an unknown name logged in")
	}
}
