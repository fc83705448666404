package agentturn

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Many turns asking at once each get their own port, and a turn that asks
// again (a retried create) gets its own back.
func TestModelPortsManyAtOnce(t *testing.T) {
	var d modelPorts
	now := time.Unix(1_000_000, 0)
	inUse := map[int32]bool{modelPortFirst + 7: true} // a live Pod's that serves a model
	const turns = 400
	got := make([]int32, turns)
	var wg sync.WaitGroup
	for i := range turns {
		wg.Go(func() {
			p, err := d.pick(types.UID(fmt.Sprintf("turn-%d", i)), inUse, now)
			if err != nil {
				t.Error(err)
			}
			got[i] = p
		})
	}
	wg.Wait()
	seen := map[int32]int{}
	for i, p := range got {
		if p < modelPortFirst || p >= modelPortFirst+modelPortCount || inUse[p] {
			t.Errorf("turn %d got port %d", i, p)
		}
		if j, dup := seen[p]; dup {
			t.Errorf("turns %d and %d both got port %d", j, i, p)
		}
		seen[p] = i
	}
	if again, _ := d.pick("turn-5", inUse, now.Add(time.Minute)); again != got[5] {
		t.Errorf("turn-5 asked again and got %d, had %d", again, got[5])
	}
}

func TestModelPortsRunOut(t *testing.T) {
	var d modelPorts
	now := time.Unix(1_000_000, 0)
	inUse := map[int32]bool{}
	for p := modelPortFirst; p < modelPortFirst+modelPortCount-1; p++ {
		inUse[p] = true
	}
	last, err := d.pick("a", inUse, now)
	if err != nil || last != modelPortFirst+modelPortCount-1 {
		t.Fatalf("the one free port: %d %v", last, err)
	}
	if _, err := d.pick("b", inUse, now); err == nil {
		t.Error("no port is free, yet one was given")
	}
	// The hold ends: a's Pod never showed (its create failed for good).
	if p, err := d.pick("b", inUse, now.Add(modelPortHold+time.Second)); err != nil || p != last {
		t.Errorf("after a's hold: %d %v", p, err)
	}
}
