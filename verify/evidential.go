package verify

// Evidential reports whether a verified log's records are evidence that
// can be counted: a log whose chain, checkpoint or embedded policy fails
// proves nothing of its calls, and one with a record that does not fit
// its session (a session started twice, a call after its end) has
// records verify did not judge, which a count would take as judged.
// Findings of a verdict, a grant or evidence name the one record they
// are about and leave the rest judged.
func Evidential(r *Report) bool {
	for _, x := range r.Findings {
		switch x.Kind {
		case FindIntegrity, FindCheckpoint, FindPolicy, FindRecord:
			return false
		}
	}
	return true
}
