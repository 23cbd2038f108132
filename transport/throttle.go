package transport

import (
	"sync"
	"time"
)

// LogThrottleInterval is how often a LogThrottle lets one key through: a
// misbehaving or hostile peer repeats itself every backoff, and one line a
// minute says as much as a line per event.
const LogThrottleInterval = time.Minute

// maxThrottleKeys bounds a LogThrottle's memory against a peer that varies
// what it sends; past it the table is forgotten (and logs again) rather
// than grown.
const maxThrottleKeys = 1024

// LogThrottle decides whether an event should be logged now: at most once
// per LogThrottleInterval for each key (a peer and a reason, say). Every
// event should still be counted in a metric. The zero value is ready.
type LogThrottle struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// Due reports whether an event for key should be logged at now, and if so
// records it.
func (l *LogThrottle) Due(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[key]; ok && now.Sub(t) < LogThrottleInterval {
		return false
	}
	if l.last == nil || len(l.last) >= maxThrottleKeys {
		l.last = map[string]time.Time{}
	}
	l.last[key] = now
	return true
}

// Len is the number of keys remembered.
func (l *LogThrottle) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.last)
}
