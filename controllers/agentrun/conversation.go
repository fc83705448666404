package agentrun

import (
	"fmt"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
)

// conversationSpace is the namespace of turnwatch's name-based (SHA-1) UUIDs.
// Conversation ids are UUIDs because agent CLIs that take a session id
// (claude --session-id) insist on one.
var conversationSpace = uuid.MustParse("6f1d2c8e-4b1a-5e7f-9a3c-2d7b8e0f4a61")

// SessionConversationID is the conversation of a session at an epoch. The
// same session and epoch always give the same id, so a continue finds the
// conversation; a bumped epoch gives a fresh one.
func SessionConversationID(namespace, session string, epoch int64) string {
	return uuid.NewSHA1(conversationSpace, fmt.Appendf(nil, "session/%s/%s/%d", namespace, session, epoch)).String()
}

// runConversationID is the conversation of one attempt of a run without a
// session: fresh for every attempt.
func runConversationID(uid types.UID, attempt int32) string {
	return uuid.NewSHA1(conversationSpace, fmt.Appendf(nil, "run/%s/%d", uid, attempt)).String()
}
