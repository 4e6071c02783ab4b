package webhook

import (
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
)

// Receiver types served by this package.
const (
	TypeWebhook  = "webhook"
	TypeSlack    = "slack"
	TypeMSTeams  = "msteams"
	TypeDiscord  = "discord"
	TypeTelegram = "telegram"
)

// DefaultLimit is a receiver type's rate limit when the config sets none:
// the service's published limit for one webhook, bot or chat.
//
//   - slack: one message a second per incoming webhook;
//   - msteams: four requests a second per webhook;
//   - discord: five requests per two seconds per webhook and thirty a
//     minute per channel: thirty a minute, bursts of five;
//   - telegram: a message a second per chat and twenty a minute per
//     group: twenty a minute, no bursts;
//   - webhook (ours): no published limit; ten a second, bursts of ten.
func DefaultLimit(typ string) ratelimit.Limit {
	switch typ {
	case TypeSlack:
		return ratelimit.Limit{Rate: 1, Per: time.Second, Burst: 1}
	case TypeMSTeams:
		return ratelimit.Limit{Rate: 4, Per: time.Second, Burst: 4}
	case TypeDiscord:
		return ratelimit.Limit{Rate: 30, Per: time.Minute, Burst: 5}
	case TypeTelegram:
		return ratelimit.Limit{Rate: 20, Per: time.Minute, Burst: 1}
	default:
		return ratelimit.Limit{Rate: 10, Per: time.Second, Burst: 10}
	}
}
