package hit

// Class is who sent a hit, as its user agent tells: a person's browser, a
// crawler, an AI assistant fetching for a person, an AI crawler gathering
// for training or an index, or none of these that can be told.
type Class uint8

// The classes. The zero value is ClassUnknown, which is also what a hit
// from a tailer that did not classify (a version 2 batch) carries.
const (
	ClassUnknown   Class = iota // no user agent, or one that is neither a browser nor a known client
	ClassHuman                  // a browser's user agent that no crawler list matches
	ClassBot                    // a crawler, feed reader, monitor, link checker or script
	ClassAIAgent                // an AI assistant fetching a page on a person's behalf (ChatGPT-User)
	ClassAICrawler              // an AI crawler, for training or an AI index (GPTBot, CCBot)
	numClasses
)

var classNames = [numClasses]string{"unknown", "human", "bot", "ai_agent", "ai_crawler"}

// Classes lists every class, in a fixed order (for metrics and reports).
func Classes() []Class {
	out := make([]Class, numClasses)
	for i := range out {
		out[i] = Class(i)
	}
	return out
}

// String is the class's name as configs, metrics and ClickHouse spell it.
func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "unknown"
}

// ParseClass reads a class's name.
func ParseClass(s string) (Class, bool) {
	for i, n := range classNames {
		if n == s {
			return Class(i), true
		}
	}
	return ClassUnknown, false
}

// Valid reports whether c is one of the classes.
func (c Class) Valid() bool { return c < numClasses }
