package ratelimit

// WindowViolation lets the external tests check slots handed out through
// NATS with the same checker as the pure GCRA tests.
var WindowViolation = windowViolation
