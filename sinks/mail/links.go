package mail

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/links"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	gomail "github.com/wneessen/go-mail"
)

// recipientLinks are the links of a message to one recipient; none for a
// message to several (sendEach splits those first).
func recipientLinks(n notify.Notification) links.RecipientLinks {
	if len(n.Recipients) != 1 {
		return links.RecipientLinks{}
	}
	return n.Links[n.Recipients[0]]
}

// snoozeText names a snooze's length: "24 h", "90 min".
func snoozeText(d time.Duration) string {
	switch {
	case d <= 0:
		return "a while"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return d.String()
}

// setListUnsubscribe adds RFC 2369's List-Unsubscribe and RFC 8058's
// List-Unsubscribe-Post: a mail client's "unsubscribe" button POSTs
// List-Unsubscribe=One-Click to the URL, which needs nothing else.
func setListUnsubscribe(m *gomail.Msg, l links.RecipientLinks) {
	if l.Unsubscribe == "" {
		return
	}
	m.SetGenHeader(gomail.Header("List-Unsubscribe"), "<"+l.Unsubscribe+">")
	m.SetGenHeader(gomail.Header("List-Unsubscribe-Post"), "List-Unsubscribe=One-Click")
}

// sendEach sends each recipient a copy of n carrying their own links.
// Every copy has the crossing's Message-ID. A failure stops at that
// recipient: a retry sends all copies again (the Message-ID shows them
// as repeats). The file transport writes the first copy to the
// crossing's file and the others beside it (key.1, key.2, …).
func (s *Sender) sendEach(ctx context.Context, n notify.Notification) error {
	for i, r := range n.Recipients {
		one := n
		one.Recipients = []string{r}
		m, err := s.render.message(one)
		if err != nil {
			return err
		}
		key := n.Key
		if i > 0 {
			key = fmt.Sprintf("%s.%d", n.Key, i)
		}
		if err := s.transport.send(ctx, key, m); err != nil {
			return fmt.Errorf("recipient %d of %d: %w", i+1, len(n.Recipients), err)
		}
	}
	return nil
}
