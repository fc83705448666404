package agentrun

import (
	"testing"

	"github.com/google/uuid"
)

func TestConversationIDs(t *testing.T) {
	a := SessionConversationID("ns", "s", 0)
	if a != SessionConversationID("ns", "s", 0) {
		t.Error("not deterministic")
	}
	seen := map[string]bool{a: true}
	for _, id := range []string{
		SessionConversationID("ns", "s", 1), SessionConversationID("other", "s", 0), SessionConversationID("ns", "t", 0),
		runConversationID("uid-1", 0), runConversationID("uid-1", 1), runConversationID("uid-2", 0),
	} {
		if seen[id] {
			t.Errorf("collision: %s", id)
		}
		seen[id] = true
	}
	for id := range seen {
		if _, err := uuid.Parse(id); err != nil {
			t.Errorf("%s is not a UUID: %v", id, err)
		}
	}
}
