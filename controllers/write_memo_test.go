package controllers

import (
	"testing"
	"time"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func TestWriteMemo(t *testing.T) {
	var w writeMemo[twv1.AgentTurnStatus]
	now := time.Now()
	old := twv1.AgentTurnStatus{}
	written := twv1.AgentTurnStatus{Outcome: twv1.TurnFailed}
	if w.stale("a", old, now) {
		t.Fatal("stale without a write")
	}
	w.wrote("a", written, now)
	if !w.stale("a", old, now.Add(time.Second)) {
		t.Error("an older cached copy is not stale")
	}
	if w.stale("a", written, now.Add(time.Second)) {
		t.Error("the cache caught up, yet stale")
	}
	if w.stale("a", old, now.Add(time.Second)) {
		t.Error("the entry was not forgotten once the cache caught up")
	}
	w.wrote("b", written, now)
	if w.stale("b", old, now.Add(memoTTL+time.Second)) {
		t.Error("an expired memo still holds")
	}
}
