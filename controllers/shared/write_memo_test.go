package shared

import (
	"testing"
	"time"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func TestWriteMemo(t *testing.T) {
	var w WriteMemo[twv1.AgentTurnStatus]
	now := time.Now()
	old := twv1.AgentTurnStatus{}
	written := twv1.AgentTurnStatus{Outcome: twv1.TurnFailed}
	if w.Stale("a", old, now) {
		t.Fatal("stale without a write")
	}
	w.Wrote("a", written, now)
	if !w.Stale("a", old, now.Add(time.Second)) {
		t.Error("an older cached copy is not stale")
	}
	if w.Stale("a", written, now.Add(time.Second)) {
		t.Error("the cache caught up, yet stale")
	}
	if w.Stale("a", old, now.Add(time.Second)) {
		t.Error("the entry was not forgotten once the cache caught up")
	}
	w.Wrote("b", written, now)
	if w.Stale("b", old, now.Add(MemoTTL+time.Second)) {
		t.Error("an expired memo still holds")
	}
}
