package scriptedmodel

import "turnwatch.dev/turnwatch/pkg/protocol"

// count adds r to the report: a request answered from the scenario counts
// as the main conversation's, a side request (no tools: a title, a
// token count, a CLI's own check) as a side one; what the model could not
// read or serve counts as neither. Called with mu held.
func (s *Server) count(r Request) {
	switch {
	case r.Side:
		s.report.SideRequests++
	case r.Conversation != nil:
		if s.report.Requests == 0 {
			s.report.Fresh = r.Conversation.Fresh()
		}
		s.report.Requests++
	}
}

// Report is what the model served so far (the drill's Pod condition,
// protocol.ConditionDrill): the scenario, the main conversation's requests
// and the side ones, and whether the first main request carried its prompt
// alone.
func (s *Server) Report() protocol.DrillReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.report
}
