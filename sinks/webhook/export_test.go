package webhook

import "github.com/pagewatch/pagewatch/pipeline/notify"

// ChatFacts are the name/value facts a chat message shows for n.
func ChatFacts(n notify.Notification) [][2]string {
	var out [][2]string
	for _, f := range newMessage(n).facts {
		out = append(out, [2]string{f.name, f.value})
	}
	return out
}

// ChatTitle is a chat message's title for n.
func ChatTitle(n notify.Notification) string { return newMessage(n).title }
