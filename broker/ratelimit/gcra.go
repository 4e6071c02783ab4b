package ratelimit

import (
	"encoding/json"
	"fmt"
	"time"
)

// state is what a key holds in KV. TAT is GCRA's theoretical arrival time:
// the instant at which the limit would be back to "one send allowed, no
// burst left" if nobody sent any more. Now is the writer's clock when it
// computed TAT; with the entry's server timestamp it reveals that writer's
// clock skew (see the package comment).
//
// JSON with RFC 3339 times, so `nats kv get` shows something a person can
// read during an incident.
type state struct {
	TAT time.Time `json:"tat"`
	Now time.Time `json:"now"`
}

func (s state) encode() []byte {
	b, err := json.Marshal(s)
	if err != nil { // two times always marshal
		panic(fmt.Sprintf("ratelimit: encode state: %v", err))
	}
	return b
}

func decodeState(b []byte) (state, error) {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return state{}, err
	}
	if s.TAT.IsZero() {
		return state{}, fmt.Errorf("no tat in %q", b)
	}
	return s, nil
}

// schedule is one GCRA step in its "reservation" form: every request is
// granted, the only question is when. Given the stored TAT (zero time if
// the key is new) and the current time, it returns the send time of the
// request and the TAT to store if the request is claimed.
//
// With T the emission interval and tau = (Burst-1)*T the burst tolerance,
// a request may go at the earliest at TAT-tau, and claiming it moves TAT to
// max(TAT, now)+T. Each claim moves TAT by at least T and goes out no
// earlier than TAT-tau, so any span of length W holds at most
// Burst + W/T send times, whatever order and clocks the requests came in
// with: that is the property the tests check.
func schedule(tat, now time.Time, l Limit) (at, next time.Time) {
	t := l.interval()
	tau := time.Duration(l.Burst-1) * t
	if tat.Before(now) {
		tat = now // idle: the whole burst is available again
	}
	at = tat.Add(-tau)
	if at.Before(now) {
		at = now
	}
	return at, tat.Add(t)
}
