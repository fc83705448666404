package scriptedmodel

// served counts what the model served (Served).
type served struct {
	main, side int
	fresh      bool
}

// count adds r to what was served: a request answered from the scenario
// counts as the main conversation's, a side request (no tools: a title, a
// token count, a CLI's own check) as a side one; what the model could not
// read or serve counts as neither. Called with mu held.
func (s *Server) count(r Request) {
	switch {
	case r.Side:
		s.served.side++
	case r.Conversation != nil:
		if s.served.main == 0 {
			s.served.fresh = r.Conversation.Fresh()
		}
		s.served.main++
	}
}

// Served is what the model served so far, whatever its log kept (a
// drill's report, protocol.DrillReport): the main conversation's requests
// and the side ones, and whether the first main request carried its
// prompt alone (no assistant message, no tool answer: Conversation.Fresh).
func (s *Server) Served() (main, side int, fresh bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served.main, s.served.side, s.served.fresh
}
