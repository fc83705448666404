package shared

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// MemoTTL bounds how long a written status is waited for in the cache:
// past it the memo is dropped and the cached copy is trusted again.
const MemoTTL = 10 * time.Second

// WriteMemo remembers the status this process last wrote on each object
// until the informer cache shows it. A pass that runs on a cached copy older
// than its own last write would decide again on stale facts and write again,
// only to fail with a conflict: an API write for nothing (the scale
// benchmark counted one per turn). Such a pass waits instead; the cache's
// update event brings the object back.
type WriteMemo[T any] struct {
	mu sync.Mutex
	m  map[types.UID]memoEntry[T]
}

type memoEntry[T any] struct {
	status T
	at     time.Time
}

// Stale says whether cached is older than this process's last write of the
// object. When the cache has caught up (or the memo expired) it forgets the
// entry.
func (w *WriteMemo[T]) Stale(uid types.UID, cached T, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[uid]
	if !ok {
		return false
	}
	if equality.Semantic.DeepEqual(e.status, cached) || now.Sub(e.at) > MemoTTL {
		delete(w.m, uid)
		return false
	}
	return true
}

// Wrote records the status as the server returned it after a write.
func (w *WriteMemo[T]) Wrote(uid types.UID, status T, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.UID]memoEntry[T]{}
	}
	w.m[uid] = memoEntry[T]{status: status, at: now}
}
