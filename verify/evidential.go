package verify

// Evidential reports whether a verified log's records are evidence: a
// log whose chain or embedded policy fails proves nothing of its calls.
func Evidential(r *Report) bool {
	for _, x := range r.Findings {
		if x.Kind == FindIntegrity || x.Kind == FindPolicy {
			return false
		}
	}
	return true
}
