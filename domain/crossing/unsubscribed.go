package crossing

// Unsubscribed records that every recipient of an email delivery had
// unsubscribed from the rule (some of them: the rest were sent to, and this record
// names those skipped).
const Unsubscribed Outcome = "unsubscribed"
