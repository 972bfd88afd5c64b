package engine

// lintNames lints a policy file given the names of the listed tools only
// (nil: no listing), as most lint tests need.
func lintNames(name string, data []byte, tools []string) ([]Finding, error) {
	var listed []ListedTool
	if tools != nil {
		listed = []ListedTool{}
	}
	for _, t := range tools {
		listed = append(listed, ListedTool{Name: t})
	}
	return lintListed(name, data, listed)
}
