package chain

// The tests write bodies of their own: what a body means is not this
// package's business, only that it is a JSON object in canonical form.

type testPrincipal struct {
	Subject string `json:"subject"`
}

type testTool struct {
	Name string `json:"name"`
}

type testSession struct {
	Server        string        `json:"server"`
	Principal     testPrincipal `json:"principal"`
	PolicyVersion string        `json:"policy_version"`
	Policy        string        `json:"policy"`
	Tools         []testTool    `json:"tools"`
	Engine        string        `json:"engine"`
}

type testDecision struct {
	Verdict string `json:"verdict"`
	Check   string `json:"check"`
	Reason  string `json:"reason"`
}

type testCall struct {
	Call   string         `json:"call"`
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"`
	Digest string         `json:"digest"`
	testDecision
}

type testResult struct {
	Call    string `json:"call,omitempty"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Status  string `json:"status"`
	Content string `json:"content,omitempty"`
	Size    int64  `json:"size"`
}

type testGrant struct {
	Grant    string `json:"grant"`
	Call     string `json:"call"`
	Tool     string `json:"tool"`
	Digest   string `json:"digest"`
	Approver string `json:"approver"`
	Answer   string `json:"answer"`
	Expires  string `json:"expires"`
}

type testEnd struct {
	Reason string `json:"reason,omitempty"`
}
